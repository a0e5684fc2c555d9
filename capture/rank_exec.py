"""``python -m capture.rank_exec --profile-rank R -- NCU… --worker WORKER…``: one rank of the ncu run.

torchrun starts this once per rank; the rank ``R`` (``RANK`` in the environment) replaces itself
with ``NCU… WORKER…`` (ncu profiling that rank's worker), every other rank with ``WORKER…`` alone,
so one rank is profiled while the others run at full speed beside it (the collectives still meet).
"""
from __future__ import annotations

import argparse
import os
import sys

#: The token that ends the ncu argv and starts the worker's.
WORKER = "--worker"


def split(argv: list[str]) -> tuple[int, list[str], list[str]]:
    """(profiled rank, ncu argv, worker argv) of this module's command line."""
    p = argparse.ArgumentParser(prog="python -m capture.rank_exec", description=__doc__.splitlines()[0])
    p.add_argument("--profile-rank", type=int, required=True, help="the rank ncu profiles")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="-- NCU ARGV --worker WORKER ARGV")
    args = p.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if WORKER not in rest:
        p.error(f"no {WORKER} in the command line")
    cut = rest.index(WORKER)
    return args.profile_rank, rest[:cut], rest[cut + 1:]


def chosen(profile_rank: int, ncu: list[str], worker: list[str], env: dict[str, str]) -> list[str]:
    """The argv this rank runs."""
    return [*ncu, *worker] if int(env.get("RANK", "0")) == profile_rank else worker


def main(argv: list[str] | None = None) -> int:
    profile_rank, ncu, worker = split(sys.argv[1:] if argv is None else argv)
    target = chosen(profile_rank, ncu, worker, dict(os.environ))
    sys.stdout.flush()
    os.execvp(target[0], target)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
