"""Ranks read as a per-rank map: a pool of forked workers, as many as the build has CPUs, or the same
functions on a Dask cluster (``--dask-scheduler``), results merged in rank order.

Each worker reads one rank at a time where its file is (readers.nsys_ranks.read_rank: its kernels
and the NVTX ranges the stages need, as numpy arrays) and reduces it there
(analyses.collectives.reduce_rank); what crosses the pipe is that model.RankReduction only: the
rank's per-stage figures, its collective kernels, its stage instance spans and the merged busy
intervals of the stages asked for, which a ``fold`` here merges into the union over ranks as each
rank arrives and drops. A worker holds one rank; this process holds the reductions and the union.
The late rank's CUDA calls are read afterwards, in a few host windows per rank only
(:func:`host_calls`). The workers are forked together before any rank is read (a worker forked later
would carry what this process holds by then). On a cluster only paths are sent: the workers read the
files where they are (a compressed export is decompressed on the worker), so every worker needs this
package and the files at the same path; the optional ``cluster`` extra installs Dask.
"""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from generator.analyses.collectives import range_filter, reduce_rank
from generator.errors import InputError
from generator.forks import fork_safe
from generator.machine import cpus
from generator.model import RankReduction
from generator.readers import nsys_ranks
from generator.readers.base import naming, plain_file
from generator.run_layout import COMPRESSED

if TYPE_CHECKING:
    from generator.pipeline.inputs import InputCache

#: One rank to read: (export as given, nsys globalPid, deviceId, ns to add to its times).
Rank = tuple[Path, int, int, int]
#: A host window: (thread globalTid, from, to), ns on the version's clock.
Window = tuple[int, int, int]
OPTION = "--dask-scheduler"
#: How long connecting to the scheduler may take (s).
CONNECT_TIMEOUT = 10
#: The Dask scheduler ranks are read on in this process and its forks (None: forked workers here).
_scheduler: str | None = None
#: The InputCache of the :func:`read_ranks` call whose workers are being forked.
_forked_cache: InputCache | None = None


@contextmanager
def scheduler(address: str | None) -> Iterator[None]:
    """Ranks read on the Dask cluster at ``address`` within the block (None: here); an InputError
    naming the option, before the block, when Dask is not installed or no scheduler answers there."""
    global _scheduler
    if address is not None:
        _client(address).close()
    before, _scheduler = _scheduler, address
    try:
        yield
    finally:
        _scheduler = before


def processes(exports: Sequence[Path], cache: InputCache | None = None) -> list[pd.DataFrame]:
    """readers.nsys_ranks.rank_processes of each export (``path`` as given), on the cluster when one
    is in use, else here (through ``cache`` when given)."""
    if _scheduler is not None:
        return _on_cluster(_scheduler, _processes_of, [(str(path),) for path in exports])
    if cache is not None:
        return [cache.rank_processes(path) for path in exports]
    return [_processes_of(str(path)) for path in exports]


def read_ranks(cache: InputCache, ranks: Sequence[Rank], stages: Sequence[str], busy_stages: Sequence[str] = (),
               fold: Callable[[RankReduction], RankReduction] | None = None,
               workers: int | None = None) -> list[RankReduction]:
    """Each rank's reduction over ``stages`` (with the busy intervals of ``busy_stages``), in the
    order given, each passed through ``fold`` here as it arrives: on the cluster when one is in use,
    else in a pool of ``workers`` (default: the CPUs this build may use) forked workers sharing
    ``cache``'s decompressed copies; in this process where forking is not safe. The first failure in
    rank order is raised."""
    fold = fold or (lambda reduction: reduction)
    jobs = [(str(path), int(gpid), int(gpu), int(offset), tuple(stages), tuple(busy_stages))
            for path, gpid, gpu, offset in ranks]
    if _scheduler is not None:
        return _on_cluster(_scheduler, _reduced_at, jobs, fold)
    if not fork_safe():
        return [fold(_reduced(cache, *job)) for job in jobs]
    global _forked_cache
    _forked_cache = cache  # what the workers forked below inherit
    try:
        context = multiprocessing.get_context("fork")
        found: dict[int, RankReduction] = {}
        failed: dict[int, BaseException] = {}
        with ProcessPoolExecutor(min(workers or cpus(), len(ranks)), mp_context=context) as pool:
            futures = {pool.submit(_forked_reduced, *job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):  # folded in any order: the union does not depend on it
                i = futures[future]
                if future.exception() is not None:
                    failed[i] = future.exception()
                else:
                    found[i] = fold(future.result())
    finally:
        _forked_cache = None
    if failed:
        raise failed[min(failed)]
    return [found[i] for i in range(len(jobs))]


def host_calls(cache: InputCache, requests: Sequence[tuple[Path, Sequence[Window], int]]) -> list[pd.DataFrame]:
    """readers.nsys_ranks.window_calls of each (export, windows, offset), on the cluster when one is in
    use, else here (through ``cache``)."""
    jobs = [(str(path), [tuple(w) for w in windows], int(offset)) for path, windows, offset in requests]
    if _scheduler is not None:
        return _on_cluster(_scheduler, _calls_at, jobs)
    return [cache.window_calls(Path(path), windows, offset) for path, windows, offset in jobs]


def _reduced(cache: InputCache, path: str, global_pid: int, gpu: int, offset: int, stages: tuple[str, ...],
             busy_stages: tuple[str, ...]) -> RankReduction:
    """One rank read through ``cache`` and reduced."""
    rows = cache.rank_rows(Path(path), global_pid, gpu, range_filter(stages), offset)
    return reduce_rank(rows, stages, busy_stages, path, global_pid, gpu)


def _forked_reduced(*job: Any) -> RankReduction:
    """In a forked worker: :func:`_reduced` through the cache it inherited."""
    assert _forked_cache is not None
    return _reduced(_forked_cache, *job)


def _processes_of(path: str) -> pd.DataFrame:
    """On any worker: the ranks of the export at ``path`` (decompressed there when compressed)."""
    with _plain(Path(path)) as plain:
        return nsys_ranks.rank_processes(plain).assign(path=path)


def _reduced_at(path: str, global_pid: int, gpu: int, offset: int, stages: tuple[str, ...],
                busy_stages: tuple[str, ...]) -> RankReduction:
    """On a cluster worker: one rank of the export at ``path`` read and reduced there."""
    with _plain(Path(path)) as plain:
        rows = nsys_ranks.read_rank(plain, global_pid, gpu, range_filter(stages), offset)
    return reduce_rank(rows, stages, busy_stages, path, global_pid, gpu)


def _calls_at(path: str, windows: list[Window], offset: int) -> pd.DataFrame:
    """On a cluster worker: readers.nsys_ranks.window_calls of the export at ``path``."""
    with _plain(Path(path)) as plain:
        return nsys_ranks.window_calls(plain, windows, offset)


@contextmanager
def _plain(path: Path) -> Iterator[Path]:
    """``path``, or its decompressed copy for the block; InputErrors inside name ``path``."""
    if path.suffix not in COMPRESSED:
        yield path
        return
    with naming(path), plain_file(path) as plain:
        yield plain


def _client(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise InputError(OPTION, "needs Dask's distributed package (pip install 'kernel-report[cluster]')") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        problem = " ".join(str(exc).split())[:200]
        raise InputError(OPTION, f"no Dask scheduler answers at {address} ({problem})") from None


def _on_cluster(address: str, call: Callable[..., Any], args: list[tuple],
                fold: Callable[[Any], Any] = lambda value: value) -> list[Any]:
    """``fold(call(*a))`` for each of ``args``, ``call`` on the cluster at ``address``, values in order,
    each released on the cluster once here; the first failure in that order raised."""
    values = []
    with _client(address) as client:
        for future in [client.submit(call, *a, pure=False) for a in args]:
            values.append(fold(future.result()))
            future.release()  # the worker may drop it now
    return values
