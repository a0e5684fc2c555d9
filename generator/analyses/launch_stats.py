"""Did a kernel or a stage get faster? The statistics: nsys durations of every launch, a bootstrap
interval of the change, and a noise band measured inside each capture.

A change is a ratio (current / previous): of the median launch durations for one kernel, of the
summed launch durations for a stage's kernel time, of the median instance span for a stage's span.
Its 95 % interval comes from a seeded bootstrap (scipy.stats.bootstrap for medians; for sums, a
bootstrap of launch pairs within each kernel), so the same inputs give the same numbers. One kernel
name covers launches of different sizes (an elementwise kernel over a 700 µs tensor and over 23 µs
ones), so a stage's launches are no sample of one distribution: resampling them, even within each
kernel, measures the mix of sizes, not how launches vary. The k-th launch of a kernel in one capture
and in the other are the same call of the same program, so a kernel with as many launches on both
sides is resampled as pairs, and the ratio of the resampled sums moves only as far as pairs differ.
The noise band is what the capture itself shows without any change: the later half of the launches
against the earlier half (of each kernel, in start order; a stage repeats its calls layer after
layer, so both halves hold one mix), in either capture, and at least one timer tick. A verdict is
"slower" or "faster" only when the whole interval lies outside the band, "unchanged" otherwise, and
"not enough launches" below MIN_LAUNCHES on either side. Captures of different sessions differ by
more than either one varies inside (another unit of the GPU model, its clocks and temperature): a
stage's band is then at least SESSION_NOISE, measured between repeat captures of one program.
The bootstrap draws at most CHUNK launch indices at a time, so its memory does not grow with the
launches; where one kernel's RESAMPLES × launches draws fit one chunk (every committed capture), the
draws and the interval are those of a single draw of the whole matrix.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: the most launch indices the bootstrap draws (and gathers durations for) at a time: 2**22, 32 MiB
#: of int64 indices and as much of durations per side, whatever the launch count
CHUNK = 1 << 22
#: fewer launches (or stage instances) than this on either side: no verdict
MIN_LAUNCHES = 5
CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0
#: at most this many runs of consecutive launches measure a kernel's drift within a capture
BLOCKS = 8
SLOWER, FASTER, UNCHANGED, TOO_FEW = "slower", "faster", "unchanged", "not enough launches"
#: a stage's kernel time between captures of one program made days apart moved up to 1.1 %, its
#: interval reaching 1.5 % (bench/session_noise.md, the committed repeat captures)
SESSION_NOISE = 0.015
#: and single kernels' medians (with MIN_LAUNCHES or more) up to 16 %: kernel verdicts between sessions are leads
SESSION_KERNEL_MOVE = 0.16
#: a stage's kernel time that has too few launches for a verdict still fails the gate when it grew by
#: more than this (+48 %): three times the farthest a single kernel's median moved between sessions
UNJUDGED_LIMIT = 3 * SESSION_KERNEL_MOVE


@dataclass(frozen=True)
class Change:
    """One verdict and the numbers it rests on (ratio = current / previous)."""

    previous: float  # the statistic of the previous capture (ns)
    current: float
    ratio: float
    low: float  # the CONFIDENCE interval of the ratio
    high: float
    noise: float  # half-width of the noise band around 1 (0.02: 0.98 … 1.02)
    verdict: str

    @property
    def rel_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rel_pct": self.rel_pct}


NAN = float("nan")


def verdict(low: float, high: float, noise: float, enough: bool) -> str:
    """"slower" / "faster" when the interval [low, high] lies wholly outside 1 ± noise."""
    if not enough or math.isnan(low) or math.isnan(high):
        return TOO_FEW
    return SLOWER if low > 1.0 + noise else FASTER if high < 1.0 - noise else UNCHANGED


def _median_ratio(before: np.ndarray, after: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(after, axis=axis) / np.median(before, axis=axis)


def median_ratio_interval(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    """CONFIDENCE percentile-bootstrap interval of median(after) / median(before), seeded: the draws
    and arithmetic of ``scipy.stats.bootstrap(..., method="percentile", vectorized=True)`` (SciPy 1.17),
    written out so that SciPy's 0.8 s of imports is not paid (tests/test_launch_stats.py checks the
    two agree bit for bit)."""
    if np.all(before == before[0]) and np.all(after == after[0]):
        ratio = float(after[0] / before[0])
        return ratio, ratio
    longest = max(len(before), len(after))
    batch = RESAMPLES if RESAMPLES * longest <= CHUNK else max(1, CHUNK // longest)  # RESAMPLES: one draw, as ever
    rng = np.random.default_rng(SEED)
    ratios = []
    for first in range(0, RESAMPLES, batch):  # as scipy's loop: each batch draws before's indices, then after's
        rows = min(batch, RESAMPLES - first)
        resampled = [sample[rng.integers(0, len(sample), (rows, len(sample)))] for sample in (before, after)]
        ratios.append(_median_ratio(*resampled, axis=-1))
    distribution = np.concatenate(ratios)
    if not np.all(np.isfinite(distribution)):  # SciPy's NaN handling and warning: left to SciPy
        return _scipy_median_ratio_interval(before, after, None if batch == RESAMPLES else batch)
    return _linear_quantiles(distribution, (1 - CONFIDENCE) / 2)


def _linear_quantiles(values: np.ndarray, alpha: float) -> tuple[float, float]:
    """The ``alpha`` and 1 − ``alpha`` quantiles of ``values`` as ``scipy.stats.quantile(method="linear")``
    computes them (its arithmetic: the results are SciPy's to the bit)."""
    y = np.sort(values)
    n = np.asarray([len(y)], dtype=np.float64)
    low = np.asarray(alpha, dtype=np.float64)
    p = np.stack((low, 1 - low), axis=-1)
    m = 1 - p
    jg = p * n + m
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g[j < 0] = 0
    j = np.clip(j, 0.0, n - 1)
    jp1 = np.clip(jp1, 0.0, n - 1)
    result = (1 - g) * y[j.astype(np.int64)] + g * y[jp1.astype(np.int64)]
    return float(result[0]), float(result[1])


def _scipy_median_ratio_interval(before: np.ndarray, after: np.ndarray, batch: int | None) -> tuple[float, float]:
    from scipy import stats

    result = stats.bootstrap((before, after), _median_ratio, n_resamples=RESAMPLES, confidence_level=CONFIDENCE,
                             method="percentile", vectorized=True, rng=np.random.default_rng(SEED), batch=batch)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def drift_noise(durations: np.ndarray) -> float:
    """How far the median of a run of consecutive launches strays within one capture: the launches in
    start order cut into up to BLOCKS runs of at least MIN_LAUNCHES (two halves at the least), the
    largest |run median / median − 1| (0 below two launches)."""
    if len(durations) < 2:
        return 0.0
    blocks = max(2, min(BLOCKS, len(durations) // MIN_LAUNCHES))
    middle = float(np.median(durations))
    return max(abs(float(np.median(run)) / middle - 1.0) for run in np.array_split(durations, blocks)) if middle else 0.0


def spread_noise(durations: np.ndarray) -> float:
    """How much single launches vary: half the interquartile range over the median (0 below two)."""
    if len(durations) < 2:
        return 0.0
    low, middle, high = np.percentile(durations, [25, 50, 75])
    return float(high - low) / 2.0 / float(middle) if middle else 0.0


def timer_tick(durations: np.ndarray) -> float:
    """The timer's step: the most frequent step between neighbouring distinct launch durations of a
    capture (ns; 1 when there is none)."""
    steps = np.diff(np.unique(durations)).astype(np.int64)
    if not len(steps):
        return 1.0
    values, counts = np.unique(steps, return_counts=True)
    return float(values[np.argmax(counts)])


def median_change(before: np.ndarray, after: np.ndarray, tick: float) -> Change:
    """The change of a median: of one kernel's launch durations, or of a stage's span per NVTX range
    instance (values in start order, ns)."""
    enough = len(before) >= MIN_LAUNCHES and len(after) >= MIN_LAUNCHES
    if not len(before) or not len(after):
        return Change(NAN, NAN, NAN, NAN, NAN, NAN, TOO_FEW)
    prev, cur = float(np.median(before)), float(np.median(after))
    ratio = cur / prev
    noise = max(drift_noise(before), drift_noise(after), spread_noise(before), spread_noise(after)) \
        + tick / min(prev, cur)
    low, high = median_ratio_interval(before, after) if enough else (NAN, NAN)
    return Change(prev, cur, ratio, low, high, noise, verdict(low, high, noise, enough))


def _resampled_sums(durations: tuple[np.ndarray, ...], rng: np.random.Generator) -> list[np.ndarray]:
    """RESAMPLES bootstrap sums of each of ``durations`` (arrays of one length n), every resample's
    launch indices drawn once for all of them: row after row of the RESAMPLES × n index matrix, at
    most CHUNK indices at a time (whole rows where a row fits; a row fits n ≤ CHUNK)."""
    n = len(durations[0])
    sums = [np.zeros(RESAMPLES) for _ in durations]
    if RESAMPLES * n <= CHUNK:  # the whole matrix in one draw
        picks = rng.integers(0, n, size=(RESAMPLES, n))
        for total, values in zip(sums, durations):
            total += values[picks].sum(axis=1)
        return sums
    rows = CHUNK // n
    if rows:
        for first in range(0, RESAMPLES, rows):
            picks = rng.integers(0, n, size=(min(rows, RESAMPLES - first), n))
            for total, values in zip(sums, durations):
                total[first:first + len(picks)] += values[picks].sum(axis=1)
        return sums
    for row in range(RESAMPLES):  # one resample is longer than a chunk: it is drawn in parts
        for start in range(0, n, CHUNK):
            picks = rng.integers(0, n, size=min(CHUNK, n - start))
            for total, values in zip(sums, durations):
                total[row] += values[picks].sum()
    return sums


def _paired_totals(before: list[np.ndarray], after: list[np.ndarray],
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """RESAMPLES bootstrap sums of all launches of either side, each kernel's launches resampled among
    themselves: as pairs (the same draws on both sides) where both sides have as many, else each side
    on its own."""
    totals = np.zeros(RESAMPLES), np.zeros(RESAMPLES)
    for pair in zip(before, after, strict=True):
        if len(pair[0]) == len(pair[1]) and len(pair[0]) > 1:
            for total, sums in zip(totals, _resampled_sums(pair, rng)):
                total += sums
            continue
        for total, durations in zip(totals, pair):
            if len(durations) < 2 or np.all(durations == durations[0]):
                total += durations.sum()
            else:
                total += _resampled_sums((durations,), rng)[0]
    return totals


def _halves_total_noise(groups: list[np.ndarray]) -> float:
    """|later-half / earlier-half − 1| of a stage's kernel time: each kernel's launch count times the
    mean of its later (earlier) half of launches, summed."""
    early = late = 0.0
    for durations in groups:
        if len(durations) < 2:
            continue
        middle = len(durations) // 2
        early += len(durations) * float(durations[:middle].mean())
        late += len(durations) * float(durations[len(durations) - middle:].mean())
    return abs(late / early - 1.0) if early else 0.0


def total_change(before: list[np.ndarray], after: list[np.ndarray], tick: float, floor: float = 0.0) -> Change:
    """The change of a stage's kernel time (the sum of its launches): one array per kernel in start
    order, aligned (before[i] and after[i] are one kernel identity; empty where a side has none).
    Enough launches: kernels with MIN_LAUNCHES or more hold at least half the time, both sides.
    ``floor``: the least noise band (SESSION_NOISE between sessions)."""
    prev = float(sum(d.sum() for d in before))
    cur = float(sum(d.sum() for d in after))
    if not prev or not cur:
        return Change(prev, cur, NAN, NAN, NAN, NAN, TOO_FEW)

    def counted(groups: list[np.ndarray], total: float) -> bool:
        return sum(d.sum() for d in groups if len(d) >= MIN_LAUNCHES) * 2 >= total

    enough = counted(before, prev) and counted(after, cur)
    noise = max(max(_halves_total_noise(before), _halves_total_noise(after)) + tick / min(prev, cur), floor)
    low = high = NAN
    if enough:
        rng = np.random.default_rng(SEED)
        previous, current = _paired_totals(before, after, rng)
        ratios = current / previous
        tail = (1.0 - CONFIDENCE) / 2 * 100
        low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    return Change(prev, cur, cur / prev, low, high, noise, verdict(low, high, noise, enough))
