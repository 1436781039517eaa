"""Many seeds of one spec: the text `0-15`, `0,3,9` or `0-3,7` (the `--seeds` flag and the
spec's `budget.seeds`) as a list of distinct seeds, and the bounds a list of seeds must keep.
"""

from __future__ import annotations

import re

from ppo_platform.errors import BadInputError, SpecIssue

MAX_SEEDS = 64  # one batch's seeds: each holds its envs, model and MLflow run in one process
MAX_SEED = 2**31 - 1  # budget.seed's bound
_PART = re.compile(r"^(\d+)(?:-(\d+))?$")
SEEDS_FIX = (
    f"give seeds as a range `0-15`, a list `0,3,9` or both `0-3,7`: distinct, >= 0, at most "
    f"{MAX_SEEDS}"
)


def read_seeds(text: str) -> list[int]:
    """`0-15`, `0,3,9` or `0-3,7` as distinct seeds in the order given; ValueError says why not."""
    seeds: list[int] = []
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise ValueError("names no seed (an empty list or an empty item)")
    for part in parts:
        match = _PART.match(part)
        if match is None:
            raise ValueError(f"{part!r} is not a seed or a range of seeds (negative?)")
        low, high = int(match[1]), int(match[2] if match[2] is not None else match[1])
        if high < low:
            raise ValueError(f"the range {part!r} runs backwards")
        if high > MAX_SEED:
            raise ValueError(f"seed {high} is past the largest seed {MAX_SEED}")
        if len(seeds) + high - low + 1 > MAX_SEEDS:
            raise ValueError(f"names more than {MAX_SEEDS} seeds")
        seeds.extend(range(low, high + 1))
    check_seeds(seeds)
    return seeds


def check_seeds(seeds: list[int]) -> list[int]:
    """`seeds` if it is 1 to MAX_SEEDS distinct seeds in [0, MAX_SEED]; ValueError says why not."""
    if not seeds:
        raise ValueError("names no seed (an empty list)")
    if len(seeds) > MAX_SEEDS:
        raise ValueError(f"names more than {MAX_SEEDS} seeds")
    outside = [seed for seed in seeds if not 0 <= seed <= MAX_SEED]
    if outside:
        raise ValueError(f"seed(s) {outside} are outside 0..{MAX_SEED}")
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:
        raise ValueError(f"names seed(s) {repeated} more than once")
    return seeds


def parse_seeds(text: str, flag: str = "--seeds") -> list[int]:
    """`read_seeds` for a command-line flag: BadInputError names the flag, the value and the fix."""
    try:
        return read_seeds(text)
    except ValueError as error:
        raise BadInputError([SpecIssue(flag, str(error), text, fix=SEEDS_FIX)], flag) from None
