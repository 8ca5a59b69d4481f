"""GOAT-Async, Alg. 2 of GOAT (§V): the number K_t of workers an asynchronous epoch waits for.

``psi`` is Eq. 36 (epochs to convergence for K participants), ``async_epochs`` replays Alg. 2's
epochs for a fixed K and ``choose_k`` picks the K minimising the expected training time.
:func:`controller.goat.goat_async` combines them with the KRGS placement; :mod:`controller.goat`
re-exports every name of this module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

_INF = math.inf


@dataclass(frozen=True)
class PsiParams:
    """Parameters of psi(K) (Eq. 36): epochs needed to reach the convergence threshold epsilon.

    ``loss_gap`` is F(x_0) - F(x_*), ``sigma2`` the local-gradient variance bound (Eq. 24),
    ``n`` the n of Eq. 34 (defaults to |W|). The defaults are illustrative, not from the paper.
    """
    loss_gap: float = 1.0
    epsilon: float = 0.1
    sigma2: float = 0.05
    n: int | None = None


def psi(k: int, params: PsiParams, n_workers: int) -> float:
    """Eq. 36: psi(K) = 4 K^2 (F0 - F*)^2 / (n (eps K - sigma^2)^2); inf when eps K <= sigma^2."""
    n = params.n or n_workers
    denom = params.epsilon * k - params.sigma2
    if denom <= 0:
        return _INF
    return 4.0 * k * k * params.loss_gap ** 2 / (n * denom * denom)


def choose_k(history: Sequence[float], psi_fn: Callable[[int], float],
             rounds: int | None = None) -> tuple[int, dict[str, Any]]:
    """Alg. 2: the number K_{t+1} of participating workers minimising T(K) x H-bar(K).

    ``history`` holds p_w, each worker's last interval between parameter distribution and its
    gradient's arrival. For each K in 1..|W|: p'_w <- p_w; for M rounds (default M = |W|, as §V-C
    suggests) the epoch lasts h_t = the K-th smallest p'; a worker with p'_w > h_t is still on its
    way (p'_w <- p'_w - h_t), the others took part and start afresh (p'_w <- p_w). H-bar is the mean
    h_t, T = psi(K) (Eq. 36) and H = T H-bar; the K with the least H wins, ties going to the larger
    K (line 16 uses <=). Returns (K, details with H-bar, T and H per K).
    """
    p = [float(v) for v in history]
    n = len(p)
    if n == 0:
        raise ValueError("GOAT-Async needs the history of at least one worker")
    m_rounds = rounds or n
    best_k, best_h = n, _INF
    table: dict[int, dict[str, float]] = {}
    for k in range(1, n + 1):
        hs = [h for h, _ in async_epochs(p, k, m_rounds)]
        h_bar = sum(hs) / len(hs)
        t = psi_fn(k)
        h = t * h_bar
        table[k] = {"H_bar": h_bar, "T": t, "H": h}
        if h <= best_h:
            best_k, best_h = k, h
    return best_k, {"K": best_k, "H": best_h, "per_K": table, "rounds": m_rounds}


def async_epochs(history: Sequence[float], k: int, rounds: int) -> list[tuple[float, list[int]]]:
    """Alg. 2's epochs for a fixed K: per epoch its length h_t (the K-th smallest remaining
    interval) and the workers (indices into ``history``) whose gradient arrives within it —
    they take part and start afresh; the others are still on their way (p'_w <- p'_w - h_t)."""
    p = [float(v) for v in history]
    if not 1 <= k <= len(p):
        raise ValueError(f"K = {k} outside 1..{len(p)}")
    cur, out = list(p), []
    for _ in range(rounds):
        h_t = sorted(cur)[k - 1]
        out.append((h_t, [i for i, c in enumerate(cur) if c <= h_t]))
        cur = [c - h_t if c > h_t else p[i] for i, c in enumerate(cur)]
    return out
