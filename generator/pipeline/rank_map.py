"""Ranks read as a per-rank map: a pool of forked workers, as many as the build has CPUs, or the same
functions on a Dask cluster (``--dask-scheduler``), results merged in rank order.

The workers are forked together before any rank is read (a worker forked later would carry the
ranks this process holds by then); each reads one rank at a time (readers.nsys_ranks.read_rank)
and sends back its tables with every name column a pandas Categorical (a code per row, each name
once), so a worker holds one rank and what crosses the pipe is small; here the names come back in
the string dtype the sequential read gives (values equal, each name one shared string). On a cluster only paths are sent: the workers
read the files where they are (a compressed export is decompressed on the worker), so every worker
needs this package and the files at the same path; the optional ``cluster`` extra installs Dask.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from generator.errors import InputError
from generator.forks import fork_safe
from generator.machine import cpus
from generator.model import RankTables
from generator.readers import nsys_ranks
from generator.readers.base import naming, plain_file
from generator.run_layout import COMPRESSED

if TYPE_CHECKING:
    from generator.pipeline.inputs import InputCache

#: One rank to read: (export as given, nsys globalPid, deviceId).
Rank = tuple[Path, int, int]
OPTION = "--dask-scheduler"
#: How long connecting to the scheduler may take (s).
CONNECT_TIMEOUT = 10
_FRAMES = ("kernels", "ranges", "calls")
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


def read_ranks(cache: InputCache, ranks: Sequence[Rank], workers: int | None = None) -> list[RankTables]:
    """Each rank's tables, in the order given: on the cluster when one is in use, else in a pool of
    ``workers`` (default: the CPUs this build may use) forked workers sharing ``cache``'s decompressed
    copies; in this process where forking is not safe. The first failure in rank
    order is raised."""
    if _scheduler is not None:
        found = _on_cluster(_scheduler, _rank_of, [(str(path), int(gpid), int(gpu)) for path, gpid, gpu in ranks])
    elif not fork_safe():
        found = [compact(cache.rank(path, int(gpid), int(gpu))) for path, gpid, gpu in ranks]
    else:
        global _forked_cache
        _forked_cache = cache  # what the workers forked below inherit
        try:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(min(workers or cpus(), len(ranks)), mp_context=context) as pool:
                futures = [pool.submit(_compact_rank, path, int(gpid), int(gpu)) for path, gpid, gpu in ranks]
                found = [future.result() for future in futures]
        finally:
            _forked_cache = None
    return [expanded(tables) for tables in found]


def compact(tables: RankTables) -> RankTables:
    """``tables`` with each frame's ``name`` a Categorical (for the way back from a worker)."""
    return dataclasses.replace(tables, **{f: _named(getattr(tables, f), "category") for f in _FRAMES})


def expanded(tables: RankTables) -> RankTables:
    """:func:`compact`'s inverse: ``name`` columns of the strings the read gave (each name one object)."""
    return dataclasses.replace(tables, **{f: _named(getattr(tables, f), None) for f in _FRAMES})


def _named(frame: pd.DataFrame, dtype: str | None) -> pd.DataFrame:
    names = frame["name"]
    if dtype is not None:
        return frame.assign(name=names.astype(dtype))
    if not isinstance(names.dtype, pd.CategoricalDtype):
        return frame
    plain = names.astype(names.cat.categories.dtype)  # the string dtype the read gave
    return frame.assign(name=plain.where(names.notna(), None) if plain.dtype == object else plain)


def _compact_rank(path: Path, global_pid: int, gpu: int) -> RankTables:
    """In a forked worker: one rank read through the cache it inherited, compacted."""
    assert _forked_cache is not None
    return compact(_forked_cache.rank(path, global_pid, gpu))


def _processes_of(path: str) -> pd.DataFrame:
    """On any worker: the ranks of the export at ``path`` (decompressed there when compressed)."""
    with _plain(Path(path)) as plain:
        return nsys_ranks.rank_processes(plain).assign(path=path)


def _rank_of(path: str, global_pid: int, gpu: int) -> RankTables:
    """On a cluster worker: one rank of the export at ``path``, compacted."""
    with _plain(Path(path)) as plain:
        tables = nsys_ranks.read_rank(plain, global_pid, gpu)
    return compact(dataclasses.replace(tables, path=path))


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


def _on_cluster(address: str, call: Callable[..., Any], args: list[tuple]) -> list[Any]:
    """``call(*a)`` for each of ``args`` on the cluster at ``address``, values in order, each released
    on the cluster once here; the first failure in that order raised."""
    values = []
    with _client(address) as client:
        for future in [client.submit(call, *a, pure=False) for a in args]:
            values.append(future.result())
            future.release()  # the worker may drop it now
    return values
