"""ESA's Eq. 1 (§5.4) against values worked by hand, and the inputs a worker measures."""
import pytest

from controller.esa_priority import JobProgress, eq1_priority, priority_byte, priority_unit


def test_eq1_by_hand_on_the_papers_two_dnns() -> None:
    """§7.2.1's DNNs: two layers (L_j = 2), DNN A Comm/Comp = 2, DNN B 0.5. With T_j = 4 s:
    A's front layer 1/4 × 2/1 × 2 = 1, its back layer 1/4 × 2/2 × 2 = 0.5; B's front layer
    1/4 × 2/1 × 0.5 = 0.25."""
    assert eq1_priority(1, 2, 4.0, 2.0) == pytest.approx(1.0)
    assert eq1_priority(2, 2, 4.0, 2.0) == pytest.approx(0.5)
    assert eq1_priority(1, 2, 4.0, 0.5) == pytest.approx(0.25)
    assert eq1_priority(1, 2, 2.0, 0.5) == pytest.approx(0.5)        # half the time left: twice P
    with pytest.raises(ValueError):
        eq1_priority(3, 2, 1.0, 1.0)
    with pytest.raises(ValueError):
        eq1_priority(1, 2, 0.0, 1.0)


def test_priority_byte_is_linear_in_one_unit_for_all_jobs_and_bounded() -> None:
    """The unit maps the highest expected P (here DNN A's front layer, 1.0) to 254; then the
    switch's halving of the byte halves P: A's back layer (0.5) is 127, B's front layer 64."""
    unit = priority_unit(1.0)
    assert unit == 254
    assert priority_byte(1.0, unit) == 254 and priority_byte(0.5, unit) == 127 and priority_byte(0.25, unit) == 64
    assert priority_byte(3.0, unit) == 254 and priority_byte(1e-9, unit) == 1 and priority_byte(0.0, unit) == 1
    with pytest.raises(ValueError):
        priority_unit(0.0)


def test_job_progress_uses_priors_then_measurements() -> None:
    """4 rounds, priors comm 2 s / comp 1 s. Round 0: T = 4 rounds × 3 s = 12, Comm/Comp = 2:
    front layer of 2 → 1/12 × 2 × 2 = 1/3. Round 1 after measuring comp 1 s, comm 3 s: T = 3 ×
    4 = 12, ratio 3 → 1/12 × 2 × 3 = 1/2. Round 2 after comp 1, comm 1: mean round (4 + 2)/2 =
    3, T = 2 × 3 = 6, ratio (last round) 1 → 1/6 × 2 × 1 = 1/3; back layer half of that."""
    p = JobProgress(comm_prior=2.0, comp_prior=1.0, rounds_total=4)
    assert p.priorities(2)[0] == pytest.approx(1 / 3)
    p.record(comp_seconds=1.0, comm_seconds=3.0)
    assert p.priorities(2)[0] == pytest.approx(1 / 2)
    p.record(comp_seconds=1.0, comm_seconds=1.0)
    assert p.priorities(2) == pytest.approx([1 / 3, 1 / 6])
    assert p.priority_bytes(2, 254) == [85, 42]           # 254/3, 254/6
    # the highest it expects to reach: its last round at the priors' 3 s, Comm/Comp now 1
    assert p.last_round_priority(2) == pytest.approx(1 / 3 * 2 * 1)


def test_job_progress_without_a_known_length_uses_attained_service() -> None:
    """Length unknown: T_j is the service attained so far (at least one round), so the job that
    has run longer ranks lower (least attained service first)."""
    young = JobProgress(comm_prior=1.0, comp_prior=1.0)
    old = JobProgress(comm_prior=1.0, comp_prior=1.0)
    for _ in range(3):
        old.record(comp_seconds=1.0, comm_seconds=1.0)
    young.record(comp_seconds=1.0, comm_seconds=1.0)
    assert old.remaining_time() == pytest.approx(6.0) and young.remaining_time() == pytest.approx(2.0)
    assert young.priorities(4)[0] == pytest.approx(3 * old.priorities(4)[0])
    # no computation measured: the ratio takes 1 ms for it instead of dividing by zero
    cold = JobProgress(comm_prior=0.5, comp_prior=0.0)
    assert cold.comm_comp_ratio() == pytest.approx(500.0)
