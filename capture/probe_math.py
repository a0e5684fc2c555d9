"""The chip probe's arithmetic, pure (no torch): repeats to a figure, the L2 knee, nccl-tests' bus
bandwidth, and the chip file written from the probe's raw records (capture/chip_probe.py).

A figure is the best of its repeats (highest rate, shortest time); its spread is
``(p90 − p10) / median`` of the repeats, in percent.
"""
from __future__ import annotations

import math
from statistics import median

#: raw records' schema
RAW_SCHEMA = "kernel-report/chip-probe-raw/1"
#: nccl-tests' bus-bandwidth factor per collective, for n ranks (PERFORMANCE.md of nccl-tests)
BUSBW_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}
#: the chip figure each probe record gives, and how the record's value is converted to it
FIGURE_OF = {
    "dram_copy": ("dram_bandwidth_gbps", 1.0),
    "dram_read": ("dram_bandwidth_gbps", 1.0),
    "l2_read": ("l2_bandwidth_gbps", 1.0),
    "tensor_bf16": ("tensor_bf16_tflops", 1.0),
    "tensor_fp16": ("tensor_fp16_tflops", 1.0),
    "tensor_fp8": ("tensor_fp8_tflops", 1.0),
    "tensor_tf32": ("tensor_tf32_tflops", 1.0),
    "fp32_fma": ("fp32_tflops", 1.0),
    "launch_shortest": ("launch_latency_us", 1.0),
    "launch_memory": ("launch_memory_us", 1.0),
    "launch_gap_graph": ("launch_gap_us", 1.0),
    "peer_copy": ("peer_copy_gbps", 1.0),
    "all_reduce": ("allreduce_busbw_gbps", 1.0),
}


#: figures timed by CUPTI, whose timestamps tick every 32 ns: one tick either way is their uncertainty
#: (the add's best moved 1.120 → 1.151 µs between two runs on one H100, every repeat of each on one tick)
TICKED, CUPTI_TICK_US = ("launch_latency_us", "launch_memory_us"), 0.032


def _quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default) of ``values``."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(samples: list[float], higher_is_better: bool = True) -> dict[str, float]:
    """``best``, ``median``, ``spread_pct`` and ``repeats`` of a figure's repeats."""
    xs = [float(x) for x in samples if x == x and not math.isinf(x)]
    if not xs:
        return {"best": math.nan, "median": math.nan, "spread_pct": math.nan, "repeats": 0}
    mid = median(xs)
    spread = (_quantile(xs, 0.9) - _quantile(xs, 0.1)) * 100.0 / mid if mid else math.nan
    return {"best": max(xs) if higher_is_better else min(xs), "median": mid, "spread_pct": spread,
            "repeats": len(xs)}


def rate(amount: float, seconds: list[float], scale: float = 1.0) -> list[float]:
    """``amount / seconds / scale`` per repeat (bytes → GB/s with scale 1e9, FLOP → TFLOP/s with 1e12)."""
    return [amount / s / scale for s in seconds if s > 0]


def knee(sizes: list[float], bandwidths: list[float]) -> dict[str, float]:
    """The L2 knee of a working-set sweep (sizes ascending, bytes; bandwidth per size): the L2
    plateau is the largest bandwidth, the DRAM level the bandwidth at the largest set; the knee is
    the first size, past the plateau, where the bandwidth falls below their geometric midpoint,
    interpolated in log size between the two sizes around the crossing."""
    if len(sizes) < 3 or len(sizes) != len(bandwidths):
        return {"plateau": math.nan, "dram_level": math.nan, "knee_bytes": math.nan}
    peak_at = max(range(len(bandwidths)), key=lambda i: bandwidths[i])
    plateau, floor = bandwidths[peak_at], bandwidths[-1]
    mid = math.sqrt(plateau * floor)
    for i in range(peak_at + 1, len(sizes)):
        if bandwidths[i] < mid:
            b0, b1 = bandwidths[i - 1], bandwidths[i]
            f = (b0 - mid) / (b0 - b1) if b0 != b1 else 1.0
            knee_bytes = math.exp(math.log(sizes[i - 1]) + f * (math.log(sizes[i]) - math.log(sizes[i - 1])))
            return {"plateau": plateau, "dram_level": floor, "knee_bytes": knee_bytes}
    return {"plateau": plateau, "dram_level": floor, "knee_bytes": math.nan}


def busbw(bytes_per_rank: float, seconds: float, ranks: int, op: str = "all_reduce") -> tuple[float, float]:
    """nccl-tests' (algbw, busbw) in GB/s: algbw = size / time, busbw = algbw × the op's factor."""
    alg = bytes_per_rank / seconds / 1e9
    return alg, alg * BUSBW_FACTOR[op](ranks)


def figures(raw: dict) -> dict[str, dict]:
    """Per probe record that ran: its figure (FIGURE_OF) with value (best), median, spread and
    repeats; two records of one figure (DRAM copy and read) give the larger, the other kept as
    ``also``."""
    out: dict[str, dict] = {}
    for rec in raw.get("records", []):
        if rec.get("status") != "ok" or rec["name"] not in FIGURE_OF:
            continue
        key, scale = FIGURE_OF[rec["name"]]
        higher = rec.get("higher_is_better", True)
        found = None
        if rec["name"] == "l2_read":  # the repeats at the plateau's working set
            best = [summarize(s)["best"] for s in rec["samples_by_size"]]
            found = knee(rec["sizes"], best)
            rec = {**rec, "samples": rec["samples_by_size"][best.index(found["plateau"])]}
        stats = summarize(rec["samples"], higher)
        if not stats["repeats"]:
            continue
        entry = {"value": stats["best"] * scale, "median": stats["median"] * scale,
                 "spread_pct": stats["spread_pct"], "repeats": stats["repeats"], "method": rec["method"],
                 "record": rec["name"]}
        if "clock_mhz" in rec:
            entry["clock_mhz"] = rec["clock_mhz"]
        if found is not None:
            entry["knee_mb"] = found["knee_bytes"] / 1e6
        previous = out.get(key)
        if previous is None or (entry["value"] > previous["value"]) == higher:
            if previous is not None:
                entry["also"] = {k: previous[k] for k in ("record", "value", "spread_pct")}
            out[key] = entry
        else:
            previous["also"] = {k: entry[k] for k in ("record", "value", "spread_pct")}
    if "launch_memory_us" not in out:
        older = _add_of_older_probe(raw)
        if older:
            out["launch_memory_us"] = older
    return out


#: the one-element add's kernel (torch's in-place add on a float tensor)
ADD_KERNEL = "CUDAFunctorOnSelf_add<float>"


def _add_of_older_probe(raw: dict) -> dict | None:
    """The one-element add of a probe that timed it only inside ``launch_shortest`` (no repeats of
    its own, before ``launch_memory``): its shortest launch, and the median of its launches."""
    rec = next((r for r in raw.get("records", []) if r.get("name") == "launch_shortest" and r.get("status") == "ok"),
               None)
    shortest = {k: v for k, v in ((rec or {}).get("shortest_by_kernel") or {}).items() if ADD_KERNEL in k}
    if len(shortest) != 1:
        return None
    (name, value), = shortest.items()
    return {"value": value, "median": (rec.get("median_by_kernel") or {}).get(name, math.nan),
            "spread_pct": math.nan, "repeats": 1, "record": "launch_shortest",
            "method": "the shortest eager launch of a one-element add (torch add_, a kernel that loads and stores) "
                      "timed by CUPTI in the probe's launch_shortest record, which timed it without repeats"}


def _rounded(value: float, digits: int = 4) -> float:
    if value != value or value == 0:
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def chip_file(raw: dict, datasheet: dict | None, datasheet_key: str | None) -> dict:
    """The chip file of a probe: every figure the probe measured (source ``measured``, with its
    method, repeats and spread, and the datasheet figure beside it), the others from the datasheet
    file (``datasheet``: its parsed YAML) or the driver; ``datasheet_chip`` names that file."""
    device = raw.get("device", {})
    sheet = (datasheet or {}).get("figures", {})
    out: dict[str, dict] = {}
    for key, fig in sheet.items():
        out[key] = {"value": fig["value"], "source": f"datasheet file {datasheet_key}: {fig['source']}"}
        if fig.get("estimate"):
            out[key].update(estimate=True, uncertainty_pct=fig["uncertainty_pct"])
    driver = f"driver via torch on the probed GPU ({device.get('name', '?')})"
    if device.get("sm_count"):
        out["sm_count"] = {"value": device["sm_count"], "source": driver}
    if device.get("memory_bytes"):
        out["dram_gb"] = {"value": _rounded(device["memory_bytes"] / 1e9), "source": driver}
    if device.get("max_sm_clock_mhz"):
        out["sm_clock_mhz"] = {"value": device["max_sm_clock_mhz"], "source": "NVML max SM clock on the probed GPU"}
    measured = figures(raw)
    for key, m in measured.items():
        entry = {"value": _rounded(m["value"]), "source": "measured",
                 **({"uncertainty_pct": round(CUPTI_TICK_US * 100.0 / m["value"], 2)} if key in TICKED else {}),
                 "measured": {"method": m["method"], "repeats": m["repeats"],
                              "spread_pct": round(m["spread_pct"], 2) if m["spread_pct"] == m["spread_pct"] else None,
                              "median": _rounded(m["median"])}}
        if "clock_mhz" in m:
            entry["measured"]["clock_mhz"] = m["clock_mhz"]
        if key in sheet:
            entry["datasheet"] = sheet[key]["value"]
        out[key] = entry
        if "knee_mb" in m and m["knee_mb"] == m["knee_mb"]:
            out["l2_mb"] = {"value": _rounded(m["knee_mb"]), "source": "measured",
                            "measured": {"method": f"knee of the {m['method']}: the working set where the read "
                                                  "bandwidth falls to the geometric mean of the L2 plateau and "
                                                  "the DRAM level", "repeats": m["repeats"],
                                         "spread_pct": round(m["spread_pct"], 2)}}
            if "l2_mb" in sheet:
                out["l2_mb"]["datasheet"] = sheet["l2_mb"]["value"]
    name = (datasheet or {}).get("name") or device.get("name") or "probed GPU"
    return {
        "name": f"{name} (measured)",
        "gpu_names": list((datasheet or {}).get("gpu_names") or [device.get("name")]),
        "datasheet_chip": datasheet_key,
        "probe": {k: raw.get(k) for k in ("date", "host", "torch", "cuda", "driver", "gpus", "seconds")}
        | {"device": device.get("name")},
        "figures": out,
    }
