"""Packet replication engine (PRE) state: multicast groups and clone (mirroring) sessions.

Two control surfaces share one state:

* P4Runtime-style ``insert_*`` / ``modify_*`` / ``delete_*`` / ``get_*`` and the upserting
  ``set_*`` with the spec's checks ((port, instance) pairs unique within a group or session,
  ALREADY_EXISTS / NOT_FOUND, multicast group 0 refused: it means "no multicast");
* the bmv2 ``simple_switch_CLI`` model used by STF files (``mc_mgrp_create``,
  ``mc_node_create``, ``mc_node_associate``, ..., ``mirroring_add``, ``mirroring_add_mc``), as
  thin wrappers.

Clone session id 0 is accepted everywhere: it is a valid data-plane session id (PSA, bmv2). The
P4Runtime rule that a *write* may not use session id 0 (0 is the read wildcard) belongs to the
P4Runtime server.

The data plane reads :meth:`PacketReplicationEngine.multicast_replicas` and
:meth:`PacketReplicationEngine.clone_replicas`, plain dict lookups.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import p4control.errors as errors

Replica = tuple[int, int]                  # (egress_port, instance a.k.a. egress_rid)


@dataclass(frozen=True)
class CloneSession:
    session_id: int
    replicas: tuple[Replica, ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0           # 0: no truncation
    multicast_group: int = 0               # bmv2 mirroring_add_mc: also copy to this group


@dataclass
class _Node:
    rid: int
    ports: list[int]
    group: int | None = None


@dataclass
class _Group:
    explicit: list[Replica] = field(default_factory=list)   # set through set_group & co
    nodes: list[int] = field(default_factory=list)          # bmv2 node handles, in order


class PacketReplicationEngine:
    """``max_port``/``max_instance`` bound replica values (bmv2: 9-bit ports in the data plane
    but P4Runtime SDN ports are 32-bit, so ports default to 32 bits; egress_rid is 16 bits)."""

    def __init__(self, max_port: int = 0xFFFFFFFF, max_instance: int = 0xFFFF,
                 max_class_of_service: int = 0xFF) -> None:
        self.max_port = max_port
        self.max_instance = max_instance
        self.max_class_of_service = max_class_of_service
        self.reset()

    def reset(self) -> None:
        """Forget every group, node and session."""
        self._groups: dict[int, _Group] = {}
        self._mcast: dict[int, tuple[Replica, ...]] = {}     # data-plane view
        self._sessions: dict[int, CloneSession] = {}
        self._nodes: dict[int, _Node] = {}
        self._next_node = 0

    # ------------------------------------------------------------------ data plane

    def multicast_replicas(self, group_id: int) -> tuple[Replica, ...]:
        """Replicas of a group in replication order; () if the group does not exist (the
        packet is then dropped, as P4Runtime prescribes)."""
        return self._mcast.get(group_id, ())

    def clone_session(self, session_id: int) -> CloneSession | None:
        return self._sessions.get(session_id)

    def clone_replicas(self, session_id: int) -> tuple[Replica, ...]:
        """Where clones of a session go: its replicas, then those of its multicast group
        (resolved now, as bmv2 does); () for an unknown session (no clone is made)."""
        s = self._sessions.get(session_id)
        if s is None:
            return ()
        if s.multicast_group:
            return s.replicas + self._mcast.get(s.multicast_group, ())
        return s.replicas

    # ------------------------------------------------------------------ multicast groups

    def set_group(self, group_id: int, replicas: list[Replica]) -> None:
        """Create or replace a group (and forget any bmv2 nodes associated with it)."""
        self._check_group_id(group_id)
        checked = self._check_replicas(replicas, f"multicast group {group_id}")
        old = self._groups.get(group_id)
        if old is not None:
            for h in old.nodes:
                self._nodes[h].group = None
        self._groups[group_id] = _Group(checked)
        self._publish(group_id)

    def insert_group(self, group_id: int, replicas: list[Replica]) -> None:
        self._check_group_id(group_id)
        if group_id in self._groups:
            raise errors.AlreadyExists(f"multicast group {group_id} already exists")
        self.set_group(group_id, replicas)

    def modify_group(self, group_id: int, replicas: list[Replica]) -> None:
        self._require_group(group_id)
        self.set_group(group_id, replicas)

    def delete_group(self, group_id: int) -> None:
        g = self._require_group(group_id)
        for h in g.nodes:
            self._nodes[h].group = None
        del self._groups[group_id]
        del self._mcast[group_id]

    def get_group(self, group_id: int) -> list[Replica]:
        self._require_group(group_id)
        return list(self._mcast[group_id])

    def groups(self) -> dict[int, list[Replica]]:
        """All groups (id -> replicas), in creation order."""
        return {gid: list(self._mcast[gid]) for gid in self._groups}

    # ------------------------------------------------------------------ clone sessions

    def set_clone_session(self, session_id: int, replicas: list[Replica],
                          class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        """Create or replace a session."""
        where = f"clone session {session_id}"
        self._check_session_id(session_id)
        checked = self._check_replicas(replicas, where)
        if not 0 <= class_of_service <= self.max_class_of_service:
            raise errors.InvalidArgument(f"{where}: class_of_service {class_of_service} is "
                                         f"not in 0..{self.max_class_of_service}")
        if packet_length_bytes < 0:
            raise errors.InvalidArgument(f"{where}: packet_length_bytes must be >= 0")
        self._sessions[session_id] = CloneSession(session_id, tuple(checked), class_of_service,
                                                  packet_length_bytes)

    def insert_clone_session(self, session_id: int, replicas: list[Replica],
                             class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        self._check_session_id(session_id)
        if session_id in self._sessions:
            raise errors.AlreadyExists(f"clone session {session_id} already exists")
        self.set_clone_session(session_id, replicas, class_of_service, packet_length_bytes)

    def modify_clone_session(self, session_id: int, replicas: list[Replica],
                             class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        self._require_session(session_id)
        self.set_clone_session(session_id, replicas, class_of_service, packet_length_bytes)

    def delete_clone_session(self, session_id: int) -> None:
        self._require_session(session_id)
        del self._sessions[session_id]

    def get_clone_session(self, session_id: int) -> CloneSession:
        return self._require_session(session_id)

    def clone_sessions(self) -> list[CloneSession]:
        return list(self._sessions.values())

    # ------------------------------------------------------------------ bmv2 CLI model

    def mc_mgrp_create(self, group_id: int) -> None:
        self.insert_group(group_id, [])

    def mc_mgrp_destroy(self, group_id: int) -> None:
        self.delete_group(group_id)

    def mc_node_create(self, rid: int, ports: list[int]) -> int:
        """Create a node (one rid, a set of ports) and return its handle (0, 1, ...)."""
        if not 0 <= rid <= self.max_instance:
            raise errors.InvalidArgument(f"node rid {rid} is not in 0..{self.max_instance}")
        # bmv2 keeps a node's ports in a bitmap: duplicates collapse and replication goes in
        # ascending port order.
        ports = sorted(set(ports))
        self._check_replicas([(p, rid) for p in ports], f"node with rid {rid}")
        handle = self._next_node
        self._next_node += 1
        self._nodes[handle] = _Node(rid, ports)
        return handle

    def mc_node_update(self, handle: int, ports: list[int]) -> None:
        node = self._require_node(handle)
        ports = sorted(set(ports))
        self._check_replicas([(p, node.rid) for p in ports], f"node {handle}")
        node.ports = ports
        if node.group is not None:
            self._publish(node.group)

    def mc_node_destroy(self, handle: int) -> None:
        node = self._require_node(handle)
        if node.group is not None:
            self.mc_node_dissociate(node.group, handle)
        del self._nodes[handle]

    def mc_node_associate(self, group_id: int, handle: int) -> None:
        g = self._require_group(group_id)
        node = self._require_node(handle)
        if node.group is not None:
            raise errors.AlreadyExists(
                f"node {handle} is already associated with multicast group {node.group}")
        node.group = group_id
        g.nodes.append(handle)
        self._publish(group_id)

    def mc_node_dissociate(self, group_id: int, handle: int) -> None:
        g = self._require_group(group_id)
        node = self._require_node(handle)
        if node.group != group_id:
            raise errors.NotFound(f"node {handle} is not associated with group {group_id}")
        node.group = None
        g.nodes.remove(handle)
        self._publish(group_id)

    def mirroring_add(self, session_id: int, egress_port: int) -> None:
        """bmv2 ``mirroring_add <session> <port>``: one replica, instance 0."""
        self.set_clone_session(session_id, [(egress_port, 0)])

    def set_clone_session_group(self, session_id: int, group_id: int) -> None:
        """bmv2 ``mirroring_add_mc <session> <group>``: clones go to the replicas of the
        group (which need not exist yet). Replaces the session."""
        self._check_session_id(session_id)
        self._check_group_id(group_id)
        self._sessions[session_id] = CloneSession(session_id, (), multicast_group=group_id)

    mirroring_add_mc = set_clone_session_group

    def mirroring_delete(self, session_id: int) -> None:
        self.delete_clone_session(session_id)

    # ------------------------------------------------------------------ helpers

    def _publish(self, group_id: int) -> None:
        # Recompute the data-plane tuple: explicit replicas first, then each node's
        # (port, rid) pairs in association order (bmv2 allows duplicates across nodes).
        g = self._groups[group_id]
        reps = list(g.explicit)
        for h in g.nodes:
            node = self._nodes[h]
            reps.extend((p, node.rid) for p in node.ports)
        self._mcast[group_id] = tuple(reps)

    def _check_group_id(self, group_id: int) -> None:
        if not isinstance(group_id, int) or group_id <= 0:
            raise errors.InvalidArgument(
                f"multicast group id must be > 0 (0 means 'no multicast'); got {group_id!r}")

    def _check_session_id(self, session_id: int) -> None:
        if not isinstance(session_id, int) or session_id < 0:
            raise errors.InvalidArgument(
                f"clone session id must be a non-negative integer; got {session_id!r}")

    def _check_replicas(self, replicas: list[Replica], where: str) -> list[Replica]:
        seen: set[Replica] = set()
        out: list[Replica] = []
        for rep in replicas:
            try:
                port, instance = rep
            except (TypeError, ValueError):
                raise errors.InvalidArgument(
                    f"{where}: replica {rep!r} is not an (egress_port, instance) pair") from None
            if not isinstance(port, int) or not 0 <= port <= self.max_port:
                raise errors.InvalidArgument(f"{where}: egress port {port!r} is out of range")
            if not isinstance(instance, int) or not 0 <= instance <= self.max_instance:
                raise errors.InvalidArgument(
                    f"{where}: instance {instance!r} is not in 0..{self.max_instance}")
            if (port, instance) in seen:
                raise errors.InvalidArgument(
                    f"{where}: duplicate replica (port {port}, instance {instance})")
            seen.add((port, instance))
            out.append((port, instance))
        return out

    def _require_group(self, group_id: int) -> _Group:
        self._check_group_id(group_id)
        g = self._groups.get(group_id)
        if g is None:
            raise errors.NotFound(f"multicast group {group_id} does not exist")
        return g

    def _require_session(self, session_id: int) -> CloneSession:
        self._check_session_id(session_id)
        s = self._sessions.get(session_id)
        if s is None:
            raise errors.NotFound(f"clone session {session_id} does not exist")
        return s

    def _require_node(self, handle: int) -> _Node:
        node = self._nodes.get(handle)
        if node is None:
            raise errors.NotFound(f"multicast node handle {handle} does not exist")
        return node


__all__ = ["PacketReplicationEngine", "CloneSession", "Replica"]
