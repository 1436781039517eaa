"""Alternating samples: every variant in turn, so the machine's noise hits them alike."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from benchmarks.harness.machine import load1

Sample = dict[str, Any]


def alternate(
    variants: Mapping[str, Callable[[int], Mapping[str, Any]]],
    pairs: int,
    *,
    warmup: bool = True,
    order: str = "abba",
    label: str = "",
    settle: Callable[[], object] | None = None,
) -> dict[str, list[Sample]]:
    """Runs every variant `pairs` times, interleaved, after one untimed warm-up each.

    A variant is called with the pair's index (0 for the warm-up), e.g. to pick its seed.
    `order="abba"` runs A B then B A (then A B ...); `"round_robin"` A B C A B C; `"rotate"`
    A B C, B C A, C A B. Each sample is
    what its variant returned plus `load1_at_start`, the 1-min load average when it began; each
    is printed as it comes in. `settle`, if given, runs before each timed sample (e.g.
    `wait_for_quiet`).
    """
    if order not in ("abba", "round_robin", "rotate"):
        raise ValueError(f"order={order!r}: use 'abba', 'round_robin' or 'rotate'")
    names = list(variants)
    if warmup:
        for name in names:
            variants[name](0)
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for index in range(pairs):
        if order == "rotate":  # A B C, B C A, C A B: none always first or after the same one
            sequence = names[index % len(names) :] + names[: index % len(names)]
        else:
            sequence = names if order == "round_robin" or index % 2 == 0 else names[::-1]
        for name in sequence:
            if settle is not None:
                settle()
            load = load1()
            sample = {**variants[name](index), "load1_at_start": load}
            samples[name].append(sample)
            figures = " ".join(
                f"{key} {value:.3f}" for key, value in sample.items() if isinstance(value, float)
            )
            print(f"  {label}pair {index + 1} {name:20} {figures}", flush=True)
    return samples


def summary(values: Iterable[float]) -> dict[str, float]:
    """Median, min and max."""
    listed = list(values)
    return {"median": statistics.median(listed), "min": min(listed), "max": max(listed)}


def summarize(samples: list[Sample], keys: Iterable[str]) -> dict[str, dict[str, float]]:
    """`summary` of each key over a variant's samples."""
    return {key: summary(sample[key] for sample in samples) for key in keys}


def cell(stats: Mapping[str, float], digits: int = 2) -> str:
    """`median (min-max)` for a results table."""
    return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f}-{stats['max']:.{digits}f})"
