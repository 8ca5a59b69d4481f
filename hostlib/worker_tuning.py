"""The worker's tuning: each default of hostlib.worker.Worker with the measurement that set it.
The C data path (hostlib/native) takes the ones it needs from here too."""
from __future__ import annotations

# Later results of the same sub-model that make a missing one count as lost (ESA §5.3's dupACK).
# One: a sub-model's fragments take one FIFO path each way and its results leave the aggregation
# point in completion order, so a later fragment's result overtaking this one means this one's
# copy (or result) was dropped. Three (TCP's) waited for two more results in a window shared by
# interleaved sub-models: measured in-process at 1 % loss (GOAT, 6 workers) rounds went
# 1.0 -> 0.15 simulated s with fewer resends (514 vs 777).
FAST_RETRANSMIT_AFTER = 1
# Worker(loss_detection=): "rack" (above, plus RACK deadlines and stale first copies presumed
# lost: quick under random loss, benchmarks/bench_loss.py) or "dupack", ESA §5.3's: three later
# results of the sub-model's path, else the timeout. Where switches reorder results by design
# (preemption, a contended pool's collisions) an overtaken result is no loss: in the twin of
# ESA §7.2 (3 jobs × 8 workers, 64 aggregators, 0.1 s jitter) "rack" resent 150,000 of ESA's
# 234,000 fragments, mean JCT 5.41 s; "dupack" 24 fragments, 2.34 s. "timeout": the timeout
# alone, for lossless runs whose switches reorder a sub-model's results all the time: sent
# layer by layer, a job's fragments in flight are one sub-model's, which ESA's preemption
# overtakes one another (twin, §7.2 on 16 servers, 3 jobs, 8 aggregators: "dupack" resent
# 1,405-8,269 fragments per job and ESA's mean JCT was 9.2 s; "timeout" none, 3.70 s)
LOSS_DETECTION, DUPACK_THRESHOLD = ("rack", "dupack", "timeout"), 3

# Retransmissions of a fragment that go to its aggregation node (RETRY, docs/protocol.md rule 8)
# before the PS is asked. The node adds a lost first copy to its partial, or answers with the
# result it kept; each RESEND to the PS instead costs the PS's link a frame and a peer a query
# (and every worker resends when one copy is lost). bench_loss.py, GOAT at 5 % loss, 1.3 Mb/s:
# 15.7 s rounds with none, 15.6 s with one, 12.8 s with two, 13.0 s with three.
NODE_TRIES = 2
# First copies awaiting a result per worker. Lossless rounds keep their links busy from 8 on; at
# 5 % loss a recovery holds a slot for about two round trips, and 10 kept the links busier (twin
# of bench_loss.py, 3 seeds: GOAT 1.97x -> 1.77x the lossless round, ATP 2.15x -> 1.92x; at 1 %
# 1.15x -> 1.14x and 1.25x -> 1.25x once crossed RESENDs went unanswered, hostlib.ps). make
# run-fattree keeps 8: lossless on a 2-core machine, 10 made its ARO and InArt rounds ~8 % slower
# (spurious resends under CPU jitter), though its twin runs every scheme the same with either.
DEFAULT_WINDOW = 10
# The window of a job no switch aggregates (every label node 0, e.g. training.local on loopback):
# no aggregator pool bounds it, only the round trip through the PS, and a window of first copies
# then fills one UDP_SEGMENT send (128 segments on recent kernels). 2-core AMD EPYC, loopback,
# 2 workers: training.local's WIDE step 46 ms with 64, 38-40 ms with 128, 40-47 ms with 256 and
# 512 (gloo 13-20 ms in the same runs); bench_hostlib's 8 MB all-reduce 1.4 Gb/s with 64,
# 1.9-2.1 with 128 and 256.
LOOPBACK_WINDOW = 128
# Where the nodes keep their completed results (the v1model program, rule 8), a retry at the node
# never goes unanswered for long: it completes the partial, gets the kept result, or turns into a
# RESEND at the switch itself. Most retries there are duplicates — a peer's copy was lost and every
# worker resends — and counting them towards the PS sent fragments to the PS's slow path while
# their nodes still held them (twin of bench_loss.py, GOAT at 5 % loss, 3 seeds, with the stale
# rule below: 9.70 s rounds with two tries at the node, 9.02 s with five).
NODE_TRIES_KEPT = 5
# Fragments being recovered (retransmitted or presumed lost) that hold no window slot, in windows,
# by loss detection. Under random loss ("rack") a recovery costs the PS's link an ask (the header
# alone) and takes a round trip or two while first copies keep coming: at 5 % loss a bound of one
# window stalled ATP's workers (twin of bench_loss.py, 3.2 Mb/s, 3 seeds: 7.42 s rounds with one
# window, 6.82 s with three, 6.96 s with four). Where results are late by design ("dupack",
# "timeout": preemption, a contended pool) a recovering fragment is mostly late, not lost, and
# more first copies beside it only contend for the same aggregators: ESA §7.2 on 16 servers,
# 4 jobs, 8 aggregators (twin) took 4.52 s with one window, 4.97 s with three.
RECOVERY_WINDOWS = {"rack": 3, "dupack": 1, "timeout": 1}
# A retransmission's wait doubles up to this many measured answer times (each an RTO: smoothed
# plus four deviations). Four, with the fastest path's smoothed RTT as a floor of each, held the
# round's last lost results for 0.2 s a try once the queues had drained (a try to the PS and
# back crosses ten switch ports, so at 5 % loss 4 in 10 tries fail): twin of bench_loss.py at
# 3.2 Mb/s, 3 seeds, GOAT 3.82 -> 3.34 s rounds, ATP 7.38 -> 6.82 s.
ANSWER_BACKOFF = 2
# A first copy unanswered after this many of its path's smoothed RTTs waits for a peer's
# recovery (or its own) and is no longer on the wire: when the window is full it is presumed lost
# (its slot freed, within the recovery bound) without waiting for a later result to show it. At
# 5 % loss every second fragment waits so, and their slots held the links ~63 % busy (twin of
# bench_loss.py, GOAT, 3 seeds: 10.94 -> 9.70 s rounds; lossless and 1 % unchanged).
STALE_AFTER = 1.5
