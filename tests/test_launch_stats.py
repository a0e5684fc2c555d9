"""The statistics of duration verdicts on synthetic launch durations whose answer is known by
construction (a shift we made, or none): ratio of medians, its bootstrap interval, the noise band."""
from __future__ import annotations

import numpy as np
import pytest

from generator.analyses import launch_stats as ls

TICK = 32.0  # the H200 captures' timer step (test_speed_change checks it on them)


def _launches(seed: int, n: int = 400, median: float = 10_000.0, sigma: float = 0.03) -> np.ndarray:
    """Log-normal launch durations (ns) with the given median, rounded to the timer tick."""
    values = np.random.default_rng(seed).lognormal(np.log(median), sigma, n)
    return np.round(values / TICK) * TICK


def test_a_shift_we_made_is_found_with_an_interval_around_it() -> None:
    before = _launches(1)
    for factor, word in ((1.10, ls.SLOWER), (0.90, ls.FASTER)):
        change = ls.median_change(before, _launches(2, median=10_000.0 * factor), TICK)
        assert change.verdict == word
        assert change.low < factor < change.high  # the interval holds the true ratio
        assert change.high - change.low < 0.02  # 400 launches of 3 % spread: a narrow interval
        assert abs(change.ratio - factor) < 0.01
        outside = change.low > 1 + change.noise if word == ls.SLOWER else change.high < 1 - change.noise
        assert outside


def test_no_shift_is_unchanged() -> None:
    """Two samples of one distribution (different seeds): the interval straddles 1 or sits in the band."""
    for seed in range(5):
        change = ls.median_change(_launches(10 + seed), _launches(20 + seed), TICK)
        assert change.verdict == ls.UNCHANGED, (seed, change)
        assert change.noise >= TICK / 10_000.0  # a timer tick at the least


def test_a_shift_inside_the_launch_to_launch_spread_is_unchanged() -> None:
    """A 1 % shift of kernels whose single launches spread ±10 %: within the capture's own variation,
    although 2000 launches pin the median down to well under 1 %."""
    before = _launches(3, n=2000, sigma=0.15)
    after = _launches(4, n=2000, median=10_100.0, sigma=0.15)
    change = ls.median_change(before, after, TICK)
    assert change.noise > 0.09 and change.verdict == ls.UNCHANGED


def test_few_launches_get_no_verdict() -> None:
    few = ls.median_change(_launches(5, n=4), _launches(6, n=400, median=20_000.0), TICK)
    assert few.verdict == ls.TOO_FEW and np.isnan(few.low)
    assert few.ratio == pytest.approx(2.0, rel=0.05)  # the numbers are still shown
    assert ls.median_change(_launches(5, n=5), _launches(6, n=5, median=20_000.0), TICK).verdict == ls.SLOWER


def test_heavy_tails_do_not_move_the_median() -> None:
    """5 % of launches 10-50× longer (preemption, a cold cache) in one capture only: unchanged; the
    same tails with a 10 % shift of the body: slower."""
    rng = np.random.default_rng(7)
    before = _launches(8)
    tails = before.copy()
    hit = rng.choice(len(tails), size=20, replace=False)
    tails[hit] *= rng.uniform(10, 50, size=20)
    assert ls.median_change(before, tails, TICK).verdict == ls.UNCHANGED
    assert np.mean(tails) > 1.5 * np.mean(before)  # a mean would have called it slower
    shifted = tails * 1.10
    change = ls.median_change(before, shifted, TICK)
    assert change.verdict == ls.SLOWER and change.low < 1.10 < change.high


def test_the_noise_band_measures_drift_inside_a_capture() -> None:
    """Launches at 1000 ns then 1100 ns (a clock step halfway): runs of 5 launches, medians 1000 and
    1100 around a median of 1050 → a drift of 50/1050 = 4.76 %; quartiles 1000 and 1100 → a spread
    of half their distance over the median, the same 4.76 %."""
    durations = np.array([1000.0] * 5 + [1100.0] * 5)
    assert ls.drift_noise(durations) == pytest.approx(50 / 1050)
    assert ls.drift_noise(np.full(40, 1000.0)) == 0.0
    assert ls.spread_noise(np.array([1000.0, 1000.0, 1100.0, 1100.0])) == pytest.approx(50 / 1050)
    assert ls.timer_tick(np.array([1024, 1056, 1088, 1120, 1121])) == 32.0


def test_stage_kernel_time_sums_every_launch() -> None:
    """Three kernels of a stage; one gets 20 % slower: the stage's kernel time moves by its share."""
    before = [_launches(30, n=200), _launches(31, n=100, median=50_000.0), _launches(32, n=50, median=2_000.0)]
    after = [_launches(33, n=200), _launches(34, n=100, median=60_000.0), _launches(35, n=50, median=2_000.0)]
    change = ls.total_change(before, after, TICK)
    expected = sum(a.sum() for a in after) / sum(b.sum() for b in before)
    assert change.ratio == pytest.approx(expected)
    assert change.verdict == ls.SLOWER and change.low < expected < change.high
    same = ls.total_change(before, [_launches(36, n=200), _launches(37, n=100, median=50_000.0),
                                     _launches(38, n=50, median=2_000.0)], TICK)
    assert same.verdict == ls.UNCHANGED
    single = [np.array([5_000.0]) for _ in range(8)]  # one launch per kernel: no spread is known
    assert ls.total_change(single, [d * 1.5 for d in single], TICK).verdict == ls.TOO_FEW


def _calls(seed: int, sizes: np.ndarray, sigma: float = 0.01) -> np.ndarray:
    """One launch per call, each call's duration jittered log-normally around its size (ns)."""
    values = sizes * np.random.default_rng(seed).lognormal(0.0, sigma, len(sizes))
    return np.round(values / TICK) * TICK


def test_one_kernel_name_over_calls_of_different_sizes() -> None:
    """One elementwise kernel name over calls of three sizes, laid out like its 38 launches in the sam
    stage of ocr-vlm-sdpa-h200-a: 12 blocks of 23, 23 and 42 µs launches, blocks 2, 5, 8 and 11 with a
    697 µs one more; next to it 104 launches of 3-35 µs. Each call jitters 1 % between two captures of one
    program. Resampling launches, even within each kernel, draws the 697 µs call 0-9 times: an
    interval far wider than ±10 % that says nothing about the launches. Resampled as pairs (the k-th
    launch of a kernel in both captures), it stays within ±1 %; the 23 and 42 µs calls 20 % slower
    move the stage by their share (+3.7 %) and are found."""
    blocks = [[23_000.0, 23_000.0, 42_000.0] + ([697_000.0] if b % 3 == 2 else []) for b in range(12)]
    mixed = np.array([d for block in blocks for d in block])
    small = np.random.default_rng(50).uniform(3_000.0, 35_000.0, 104)
    before = [_calls(51, mixed), _calls(52, small)]
    after = [_calls(53, mixed), _calls(54, small)]
    same = ls.total_change(before, after, TICK)
    assert same.verdict == ls.UNCHANGED
    assert 0.99 < same.low <= same.ratio <= same.high < 1.01
    rng = np.random.default_rng(ls.SEED)  # what resampling each side on its own gives
    draws = [sum(d[rng.integers(0, len(d), size=(ls.RESAMPLES, len(d)))].sum(axis=1) for d in side)
             for side in (before, after)]
    unpaired = np.percentile(draws[1] / draws[0], [2.5, 97.5])
    assert unpaired[0] < 0.9 and unpaired[1] > 1.1
    slower = [_calls(53, np.where(mixed < 100_000.0, mixed * 1.20, mixed)), after[1]]
    change = ls.total_change(before, slower, TICK)
    share = 0.2 * (24 * 23_000.0 + 12 * 42_000.0) / sum(d.sum() for d in before)
    assert change.verdict == ls.SLOWER and change.low < 1 + share < change.high
    assert ls.total_change([*before, np.array([], dtype=float)], [*after, _calls(55, small)], TICK).verdict \
        == ls.SLOWER  # a kernel only the current capture ran: all its time is the change


def test_the_same_inputs_give_the_same_numbers() -> None:
    a, b = _launches(40), _launches(41, median=10_300.0)
    assert ls.median_change(a, b, TICK) == ls.median_change(a, b, TICK)
    assert ls.total_change([a, b], [b, a * 1.01], TICK) == ls.total_change([a, b], [b, a * 1.01], TICK)


@pytest.mark.parametrize(("n_before", "n_after", "chunk"), [(400, 401, ls.CHUNK), (7, 12, ls.CHUNK), (40, 30, 25_000)])
def test_the_median_interval_is_scipys_to_the_bit(monkeypatch: pytest.MonkeyPatch, n_before: int, n_after: int,
                                                  chunk: int) -> None:
    """The interval written out in numpy is scipy.stats.bootstrap's (same draws, same quantile
    arithmetic), in one draw and in batches (a small CHUNK), on floats and on integer durations."""
    monkeypatch.setattr(ls, "CHUNK", chunk)
    for seed in range(4):
        before, after = _launches(seed, n_before, sigma=0.2), _launches(seed + 50, n_after, sigma=0.2)
        for cast in (np.float64, np.int64):
            b, a = before.astype(cast), after.astype(cast)
            batch = None if ls.RESAMPLES * max(n_before, n_after) <= chunk else max(1, chunk // max(n_before, n_after))
            assert ls.median_ratio_interval(b, a) == ls._scipy_median_ratio_interval(b, a, batch)
