"""The one error type for bad input: it names the file and the problem in one line."""
from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """An input file (or config) that cannot be used, with the reason why."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self) -> tuple[type, tuple[str, str], dict]:  # crosses process boundaries intact (notes too)
        return InputError, (self.path, self.problem), self.__dict__
