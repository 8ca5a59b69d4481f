import pytest

from p4control import errors
from p4sim.runtime.pre import CloneSession, PacketReplicationEngine


def test_multicast_group_lifecycle():
    pre = PacketReplicationEngine()
    pre.insert_group(1, [(2, 0), (3, 0), (2, 1)])
    assert pre.multicast_replicas(1) == ((2, 0), (3, 0), (2, 1))   # order preserved
    assert pre.get_group(1) == [(2, 0), (3, 0), (2, 1)]
    with pytest.raises(errors.AlreadyExists):
        pre.insert_group(1, [])
    pre.modify_group(1, [(5, 7)])
    assert pre.get_group(1) == [(5, 7)]
    pre.set_group(2, [])
    pre.set_group(2, [(1, 1)])                                      # upsert
    assert pre.groups() == {1: [(5, 7)], 2: [(1, 1)]}
    pre.delete_group(1)
    assert pre.multicast_replicas(1) == ()                          # unknown group: drop
    for call in (lambda: pre.modify_group(1, []), lambda: pre.delete_group(1),
                 lambda: pre.get_group(1)):
        with pytest.raises(errors.NotFound):
            call()


@pytest.mark.parametrize("call", [
    lambda p: p.insert_group(0, []),
    lambda p: p.set_group(0, []),
    lambda p: p.modify_group(0, []),
    lambda p: p.delete_group(0),
    lambda p: p.get_group(0),
    lambda p: p.insert_group(-3, []),
    lambda p: p.insert_group(1, [(1, 0), (1, 0)]),                  # duplicate pair
    lambda p: p.insert_group(1, [(-1, 0)]),
    lambda p: p.insert_group(1, [(1, 0x10000)]),                    # rid is 16 bits
    lambda p: p.insert_group(1, [(1 << 32, 0)]),
    lambda p: p.insert_group(1, [(1, 2, 3)]),
    lambda p: p.insert_group(1, [5]),
    lambda p: p.insert_clone_session(-1, [(1, 0)]),
    lambda p: p.modify_clone_session(-1, [(1, 0)]),
    lambda p: p.delete_clone_session(-1),
    lambda p: p.get_clone_session("1"),
    lambda p: p.set_clone_session(-1, [(1, 0)]),
    lambda p: p.set_clone_session_group(1, 0),
    lambda p: p.set_clone_session_group(-1, 1),
    lambda p: p.set_clone_session(1, [(1, 0), (1, 0)]),
    lambda p: p.set_clone_session(1, [(1, 0)], class_of_service=256),
    lambda p: p.set_clone_session(1, [(1, 0)], packet_length_bytes=-1),
    lambda p: p.mc_node_create(0x10000, [1]),
    lambda p: p.mc_node_create(1, [-2]),
])
def test_invalid_arguments(call):
    pre = PacketReplicationEngine()
    with pytest.raises(errors.InvalidArgument):
        call(pre)
    assert pre.groups() == {} and pre.clone_sessions() == []        # nothing half-written


def test_port_and_instance_limits_are_configurable():
    pre = PacketReplicationEngine(max_port=511, max_instance=3)
    pre.set_group(1, [(511, 3)])
    with pytest.raises(errors.InvalidArgument):
        pre.set_group(1, [(512, 0)])
    with pytest.raises(errors.InvalidArgument):
        pre.set_group(1, [(1, 4)])


def test_clone_session_lifecycle():
    pre = PacketReplicationEngine()
    pre.insert_clone_session(5, [(0xFFFFFFFD, 1)], class_of_service=2, packet_length_bytes=4096)
    s = pre.get_clone_session(5)
    assert s == CloneSession(5, ((0xFFFFFFFD, 1),), 2, 4096)
    assert pre.clone_session(5) is s
    with pytest.raises(errors.AlreadyExists):
        pre.insert_clone_session(5, [])
    pre.modify_clone_session(5, [(1, 0), (2, 0)])
    assert pre.clone_session(5).replicas == ((1, 0), (2, 0))
    assert pre.clone_session(5).class_of_service == 0
    pre.insert_clone_session(0, [(3, 0)])        # 0 is a valid data-plane session id
    assert [s.session_id for s in pre.clone_sessions()] == [5, 0]
    assert pre.clone_replicas(0) == ((3, 0),)
    pre.delete_clone_session(5)
    assert pre.clone_session(5) is None
    for call in (lambda: pre.modify_clone_session(5, []), lambda: pre.delete_clone_session(5),
                 lambda: pre.get_clone_session(5)):
        with pytest.raises(errors.NotFound):
            call()


def test_mirroring_cli():
    pre = PacketReplicationEngine()
    pre.mirroring_add(0, 4)
    pre.mirroring_add(0, 6)                      # replaces
    assert pre.clone_session(0).replicas == ((6, 0),)
    pre.mirroring_delete(0)
    assert pre.clone_session(0) is None and pre.clone_replicas(0) == ()
    with pytest.raises(errors.NotFound):
        pre.mirroring_delete(0)


def test_clone_session_to_a_multicast_group():
    pre = PacketReplicationEngine()
    pre.mirroring_add_mc(3, 7)                   # the group may be created later
    assert pre.clone_session(3).multicast_group == 7
    assert pre.clone_replicas(3) == ()
    pre.set_group(7, [(1, 1), (2, 2)])
    assert pre.clone_replicas(3) == ((1, 1), (2, 2))
    pre.set_clone_session(3, [(9, 0)])           # a plain session again
    assert pre.clone_replicas(3) == ((9, 0),)


def test_bmv2_node_model():
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(1)
    assert pre.multicast_replicas(1) == ()
    n0 = pre.mc_node_create(10, [3, 1, 2, 1])
    n1 = pre.mc_node_create(20, [1])
    assert (n0, n1) == (0, 1)
    pre.mc_node_associate(1, n1)
    pre.mc_node_associate(1, n0)
    # association order, ports ascending within a node
    assert pre.multicast_replicas(1) == ((1, 20), (1, 10), (2, 10), (3, 10))
    pre.mc_node_update(n0, [5])
    assert pre.multicast_replicas(1) == ((1, 20), (5, 10))
    with pytest.raises(errors.AlreadyExists):
        pre.mc_node_associate(1, n0)
    pre.mc_node_dissociate(1, n1)
    assert pre.multicast_replicas(1) == ((5, 10),)
    with pytest.raises(errors.NotFound):
        pre.mc_node_dissociate(1, n1)
    pre.mc_node_destroy(n0)
    assert pre.multicast_replicas(1) == ()
    with pytest.raises(errors.NotFound):
        pre.mc_node_associate(1, n0)
    with pytest.raises(errors.NotFound):
        pre.mc_node_associate(7, n1)
    with pytest.raises(errors.NotFound):
        pre.mc_node_update(99, [1])
    with pytest.raises(errors.AlreadyExists):
        pre.mc_mgrp_create(1)
    pre.mc_node_associate(1, n1)
    pre.mc_mgrp_destroy(1)
    assert pre.groups() == {}
    pre.mc_mgrp_create(2)
    pre.mc_node_associate(2, n1)                  # freed by the group's destruction


def test_set_group_replaces_node_associations():
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(1)
    n = pre.mc_node_create(1, [4])
    pre.mc_node_associate(1, n)
    pre.set_group(1, [(9, 9)])
    assert pre.get_group(1) == [(9, 9)]
    pre.mc_node_associate(1, n)                   # the node is free again
    assert pre.get_group(1) == [(9, 9), (4, 1)]


def test_reset():
    pre = PacketReplicationEngine()
    pre.set_group(1, [(1, 1)])
    pre.mirroring_add(1, 1)
    pre.mc_node_create(1, [1])
    pre.reset()
    assert pre.groups() == {} and pre.clone_sessions() == []
    assert pre.mc_node_create(1, [1]) == 0
