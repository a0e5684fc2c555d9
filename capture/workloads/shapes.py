"""The work each numbered operator call asked for: one row of ``ops/calls.csv`` per call
(:data:`~generator.run_layout.CALLS_COLUMNS`), read in the marked iterations from the call's
arguments and result as the marking dispatch mode sees them (shapes, dtypes and strides only: no
tensor's data is read, nothing is launched).

FLOP come from ``torch.utils.flop_counter``'s formulas (those FlopCounterMode uses); an operator
without one has none, except three the mode sees undecomposed where FlopCounterMode counts their
decomposition: ``aten.linear`` and ``aten.matmul`` (torch's ``mm`` formula on (M×K)·(K×N), times
the batch), ``aten.scaled_dot_product_attention`` (torch's SDPA formula), and ``aten._grouped_mm``
(no formula in torch 2.11): 2·M·N·K over its groups. Ideal bytes: each distinct input tensor read once and each output tensor written once
(strided tensors; with a sparse or nested one, unknown and its strides null).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import torch
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from capture.workloads import stages
from capture.workloads.ops import Record
from generator.run_layout import CALLS_COLUMNS

aten = torch.ops.aten
#: Matrix products whose m, n, k, batch are read off their operands.
_PRODUCTS = {aten.mm, aten.addmm, aten._scaled_mm, aten.bmm, aten.baddbmm, aten.linear, aten.matmul, aten._grouped_mm}
#: Products without a formula of their own, counted with torch's mm formula on their (m, n, k) × batch.
_AS_MM = {aten.linear, aten.matmul, aten._grouped_mm}
#: Operators counted with the formula of the one they dispatch to.
_SAME_FORMULA = {aten.scaled_dot_product_attention: aten._scaled_dot_product_flash_attention}


def _tensors(tree: object) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _strides(t: torch.Tensor) -> list[int] | None:
    """A strided tensor's strides; None for another layout (sparse, nested: they have none)."""
    return list(t.stride()) if t.layout == torch.strided and not t.is_nested else None


def matrix_dims(packet: object, args: tuple, out: object) -> tuple[int, int, int, int] | None:
    """(m, n, k, batch) of a matrix product, out = batch × (m×k)·(k×n); None for other operators."""
    if packet not in _PRODUCTS:
        return None
    a, b = (args[1], args[2]) if packet in (aten.addmm, aten.baddbmm) else (args[0], args[1])
    if packet is aten.linear:  # input (..., k), weight (n, k)
        return math.prod(a.shape[:-1]), b.shape[0], a.shape[-1], 1
    if packet is aten.matmul:  # (..., m, k)·(..., k, n); a vector operand is no matrix product here
        if a.dim() < 2 or b.dim() < 2:
            return None
        return a.shape[-2], b.shape[-1], a.shape[-1], math.prod(out.shape[:-2])
    if packet is aten._grouped_mm:
        if a.dim() == 2 and b.dim() == 2:  # groups split k: out (g, m, n)
            return a.shape[0], b.shape[1], a.shape[1], 1
        if a.dim() == 2:  # groups split the rows of a: b (g, k, n)
            return a.shape[0], b.shape[-1], a.shape[1], 1
        return a.shape[-2], b.shape[-1], a.shape[-1], a.shape[0] if a.dim() == 3 else b.shape[0]
    if a.dim() == 3:
        return a.shape[1], b.shape[2], a.shape[2], a.shape[0]
    return a.shape[0], b.shape[1], a.shape[1], 1


def flop(packet: object, args: tuple, kwargs: dict, out: object, dims: tuple[int, int, int, int] | None) -> int | None:
    """torch's FLOP formula for the call (see the module doc); None without one."""
    if packet in _AS_MM:
        if dims is None:
            return None
        m, n, k, batch = dims
        return batch * flop_registry[aten.mm]((m, k), (k, n))
    formula = flop_registry.get(_SAME_FORMULA.get(packet, packet))
    if formula is None:
        return None
    try:
        return int(formula(*args, **kwargs, out_val=out))
    except Exception:  # noqa: BLE001 -- a formula that does not fit these arguments: no FLOP known
        return None


def row(iteration: str, number: int, func: object, args: tuple, kwargs: dict, out: object) -> list[object]:
    """The ``ops/calls.csv`` row of one call (:data:`CALLS_COLUMNS`)."""
    inputs, outputs = _tensors((args, kwargs)), _tensors(out)
    packet = getattr(func, "overloadpacket", None)
    try:
        dims = matrix_dims(packet, args, out)
    except (AttributeError, IndexError, TypeError):  # an overload whose operands are not two matrices
        dims = None
    distinct = list({id(t): t for t in inputs}.values())
    strides = [_strides(t) for t in inputs]
    dense = all(_strides(t) is not None for t in outputs) and None not in strides
    return [
        iteration, number, str(func), stages.current or "",
        json.dumps([list(t.shape) for t in inputs]), json.dumps([str(t.dtype).removeprefix("torch.") for t in inputs]),
        json.dumps(strides), json.dumps([list(t.shape) for t in outputs]),
        flop(packet, args, kwargs, out, dims),
        sum(map(_bytes, distinct)) + sum(map(_bytes, outputs)) if dense else None,  # unknown for sparse, nested
        *(dims or (None,) * 4),
    ]


class Calls:
    """The rows of the marked iterations' calls, in the order they returned."""

    def __init__(self) -> None:
        self.rows: list[list[object]] = []

    def recorder(self, iteration: str) -> Record:
        """What :class:`~capture.workloads.ops.Operators` calls with each call of ``iteration``."""
        def record(number: int, func: object, args: tuple, kwargs: dict, out: object) -> None:
            self.rows.append(row(iteration, number, func, args, kwargs, out))

        return record

    def write(self, path: Path) -> None:
        """``path`` (its folder made), the rows ordered by iteration and call number."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(CALLS_COLUMNS)
            out.writerows(["" if v is None else v for v in r] for r in sorted(self.rows, key=lambda r: (r[0], r[1])))

