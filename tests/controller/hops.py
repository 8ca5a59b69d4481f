"""Hop distances for the independent checks (written apart from controller/): plain BFS in
which hosts end paths but never carry them."""
from __future__ import annotations

from collections import deque
from typing import Callable, Mapping, Sequence


def hop_distances(adj: Mapping[str, Sequence[str]], src: str, is_host: Callable[[str], bool]) -> dict[str, int]:
    """Hops from ``src`` to every node it reaches; nodes other than ``src`` for which
    ``is_host`` holds are never expanded."""
    dist, queue = {src: 0}, deque([src])
    while queue:
        u = queue.popleft()
        if u != src and is_host(u):
            continue
        for v in adj[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist
