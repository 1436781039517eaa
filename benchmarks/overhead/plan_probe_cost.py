"""What the planner's reward probe adds to `ppo-platform plan` with a cold env cache.

`inspect_env` plays the env with seeded random actions for at most 1,000 steps or 0.5 s
(`planner/reward_probe.py`), once per env and gymnasium version (then the env cache answers).
This times exactly that call, `probe_rewards(env)`, on a freshly created env, ROUNDS times per
env: median and min-max, with the 1-min load beside them.

    python -m benchmarks.overhead.plan_probe_cost [--rounds 7] [--envs Acrobot-v1 CartPole-v1 ...]

Results: benchmarks/results/plan_probe_cost.{md,json}.
"""

from __future__ import annotations

import argparse

from benchmarks.harness import cell, command_line, load1, machine, summary, timed, write_results

ENVS = ["CartPole-v1", "Acrobot-v1", "MountainCar-v0", "Pendulum-v1", "LunarLander-v3"]


def probe_times(env_id: str, rounds: int) -> tuple[list[float], list[float], int]:
    from ppo_platform.envs.ids import usable_env
    from ppo_platform.planner.reward_probe import probe_rewards

    times, loads, steps = [], [], [0]
    for _ in range(rounds):
        with usable_env(env_id) as env:
            loads.append(load1())
            times.append(timed(lambda env=env: steps.append(probe_rewards(env).steps))["wall_s"])
    return times, loads, steps[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--envs", nargs="+", default=ENVS)
    args = parser.parse_args()
    report: dict = {
        "command": command_line("benchmarks.overhead.plan_probe_cost"),
        "machine": machine(),
        "rows": [],
    }
    for env_id in args.envs:
        times, loads, steps = probe_times(env_id, args.rounds)
        report["rows"].append({"env": env_id, "times_s": times, "loads": loads, "steps": steps})
    write_results(report, "plan_probe_cost", markdown)


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# The planner's reward probe: cost per env (paid once per env, then cached)",
        "",
        f"`{report['command']}`; {m['date_utc']} UTC, commit {m['git_commit']}, {m['cpu']} "
        f"({m['cores']} cores, shared with other jobs), Python {m['python']}.",
        f"Load: before `{m['uptime_before']}`; after `{report['uptime_after'].strip()}`.",
        "",
        "| env | random steps | probe s: median (min-max) | 1-min load |",
        "|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['env']} | {row['steps']} | {cell(summary(row['times_s']), 3)} "
            f"| {min(row['loads']):.1f}-{max(row['loads']):.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
