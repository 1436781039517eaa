"""ppo-platform vs CleanRL's single-file PPO, whole processes from the shell, alternating pairs.

Each pair runs `ppo-platform run <spec>` and CleanRL's script (from its own venv,
benchmarks/.venv-cleanrl, `make bench-cleanrl-venv`) with the same hyperparameters, one thread
each (OMP_NUM_THREADS=1, MKL_NUM_THREADS=1), in the order A B then B A. Wall time, CPU time
(user + sys of the child, from os.wait4) and the 1-min load at each start; medians with min-max;
machine, versions, commit and the final returns go into benchmarks/results/cleanrl_ab.{md,json}.

    python -m benchmarks.throughput.cleanrl_ab          # CartPole, throughput, HalfCheetah
    python -m benchmarks.throughput.cleanrl_ab --rows cartpole --pairs 2 --steps 20000 --out quick
    python -m benchmarks.throughput.cleanrl_ab --rows throughput_compiled --out cleanrl_ab_compiled
    python -m benchmarks.throughput.cleanrl_ab --rows atari --pairs 2 --out /tmp/atari  # EnvPool

CleanRL's scripts are copied from a CleanRL git checkout into benchmarks/.cleanrl/ (never
committed) by `--copy-scripts REPO`, which applies the small patches in `PATCHES` so that
scripts written for gymnasium 0.29 run on gymnasium 1.x as they did there, and the helper
modules they import (`HELPERS`). The atari row runs ppo_atari.py (gymnasium's SyncVectorEnv over
SB3's Atari wrappers; its venv needs `ale-py` and `opencv-python-headless`) against the platform
on EnvPool (specs/breakout_cleanrl.yaml); ppo_atari_envpool.py imports the old `gym` package
and EnvPool, which the CleanRL venv does not have.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import (
    ROOT,
    alternate,
    cell,
    command_line,
    header,
    machine,
    package_versions,
    run_process,
    summarize,
    versions,
    write_results,
)

CLEANRL_DIR = ROOT / "benchmarks" / ".cleanrl"
CLEANRL_PYTHON = ROOT / "benchmarks" / ".venv-cleanrl" / "bin" / "python"
SCRIPTS = ("ppo.py", "ppo_continuous_action.py", "ppo_atari.py")
HELPERS = ("cleanrl_utils/__init__.py", "cleanrl_utils/atari_wrappers.py")
EVAL_OFF = ["evaluation.every_timesteps=0", "evaluation.episodes=1"]

_FINAL_INFO_OLD = """            if "final_info" in infos:
                for info in infos["final_info"]:
"""
_FINAL_INFO_NEW = """            if "_episode" in infos.get("final_info", {}):
                final = infos["final_info"]
                for info in [
                    {"episode": {k: v[i] for k, v in final["episode"].items()}}
                    for i in np.nonzero(final["_episode"])[0]
                ]:
"""
_SYNC_OLD = "    envs = gym.vector.SyncVectorEnv(\n"
_SYNC_NEW = (
    "    envs = gym.vector.SyncVectorEnv(autoreset_mode=gym.vector.AutoresetMode.SAME_STEP, "
    "env_fns=\n"
)
# (script, old text, new text, why): the whole patch, applied at copy time.
PATCHES = (
    *(
        (script, old, new, why)
        for script in SCRIPTS
        for old, new, why in (
            (_SYNC_OLD, _SYNC_NEW, "same-step autoreset, gymnasium 0.29's (1.x: next-step)"),
            (_FINAL_INFO_OLD, _FINAL_INFO_NEW, "final_info is one dict of arrays in 1.x"),
        )
    ),
    (
        "ppo_continuous_action.py",
        "TransformObservation(env, lambda obs: np.clip(obs, -10, 10))",
        "TransformObservation(env, lambda obs: np.clip(obs, -10, 10), env.observation_space)",
        "1.x's TransformObservation takes the observation space",
    ),
    (
        "ppo_atari.py",
        "import gymnasium as gym\n",
        "import ale_py\nimport gymnasium as gym\n\ngym.register_envs(ale_py)\n",
        "ale-py >= 0.9 registers its games on request",
    ),
    (
        "ppo_atari.py",
        "gym.wrappers.GrayScaleObservation(env)",
        "gym.wrappers.GrayscaleObservation(env)",
        "1.x's GrayscaleObservation (0.29: GrayScaleObservation)",
    ),
    (
        "ppo_atari.py",
        "gym.wrappers.FrameStack(env, 4)",
        "gym.wrappers.FrameStackObservation(env, 4)",
        "1.x's FrameStackObservation (0.29: FrameStack)",
    ),
)


def copy_scripts(repo: str, ref: str) -> None:
    """CleanRL's scripts at `ref` from `repo` (a clone or bare git dir), patched, to .cleanrl."""
    CLEANRL_DIR.mkdir(parents=True, exist_ok=True)
    if "://" in repo:  # a URL: one bare clone, kept beside the scripts
        git_dir = str(CLEANRL_DIR / "repo.git")
        if not Path(git_dir).exists():
            subprocess.run(["git", "clone", "--quiet", "--bare", repo, git_dir], check=True)
    else:
        git_dir = repo if (Path(repo) / "HEAD").exists() else str(Path(repo) / ".git")
    for script in (*SCRIPTS, *HELPERS):
        source = script if script in HELPERS else f"cleanrl/{script}"
        text = subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"{ref}:{source}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        for target, old, new, why in PATCHES:
            if target == script:
                if old not in text:
                    sys.exit(f"{script} at {ref}: the text to patch ({why}) is not there")
                text = text.replace(old, new, 1)
        (CLEANRL_DIR / script).parent.mkdir(parents=True, exist_ok=True)
        (CLEANRL_DIR / script).write_text(text)
    commit = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", ref], capture_output=True, text=True
    ).stdout.strip()
    (CLEANRL_DIR / "COMMIT").write_text(commit + "\n")
    print(f"CleanRL {commit[:8]}: {', '.join(SCRIPTS)} -> {CLEANRL_DIR}")


@dataclass
class Row:
    name: str
    description: str
    spec: str
    sets: list[str]
    script: str
    flags: list[str]
    steps: int
    differences: str = ""


CARTPOLE_FLAGS = [
    *("--env-id", "CartPole-v1", "--num-envs", "8", "--num-steps", "32"),
    *("--update-epochs", "20", "--num-minibatches", "1", "--learning-rate", "1e-3"),
    *("--anneal-lr", "--gamma", "0.98", "--gae-lambda", "0.8", "--no-clip-vloss"),
    *("--clip-coef", "0.2", "--ent-coef", "0.0", "--vf-coef", "0.5", "--max-grad-norm", "0.5"),
]
THROUGHPUT_SETS = ["env.n_envs=64", "update.epochs=4", "update.minibatch_size=512"]
THROUGHPUT_FLAGS = [*CARTPOLE_FLAGS[:2], "--num-envs", "64", *CARTPOLE_FLAGS[4:6]]
THROUGHPUT_FLAGS += ["--update-epochs", "4", "--num-minibatches", "4", *CARTPOLE_FLAGS[10:]]
CLIP_SCHEDULE = (
    "the platform's clip range decays linearly (specs/cartpole.yaml), CleanRL's is fixed"
)
ATARI_SETUP = (
    "the atari row needs ale-py and opencv-python-headless in the CleanRL venv: "
    "benchmarks/.venv-cleanrl/bin/python -m pip install torch==2.13.0 ale-py "
    "opencv-python-headless (or make bench-cleanrl-venv on a new venv)"
)
VALUE_LOSS = "CleanRL's value loss is 0.5 x MSE (SB3's: MSE, so c_v weighs it twice as much)"


def rows(steps: int | None) -> dict[str, Row]:
    return {
        "cartpole": Row(
            "cartpole",
            "CartPole-v1, specs/cartpole.yaml's hyperparameters, evaluation off",
            "specs/cartpole.yaml",
            EVAL_OFF,
            "ppo.py",
            CARTPOLE_FLAGS,
            steps or 100_000,
            f"{CLIP_SCHEDULE}; {VALUE_LOSS}",
        ),
        "throughput": Row(
            "throughput",
            "CartPole-v1, 64 envs x 32 steps, K 4, 4 minibatches",
            "specs/cartpole.yaml",
            EVAL_OFF + THROUGHPUT_SETS,
            "ppo.py",
            THROUGHPUT_FLAGS,
            steps or 1_000_000,
            f"{CLIP_SCHEDULE}; {VALUE_LOSS}",
        ),
        "throughput_compiled": Row(
            "throughput_compiled",
            "CartPole-v1, 64 envs x 32 steps, K 4, 4 minibatches, compiled path",
            "specs/cartpole.yaml",
            [*EVAL_OFF, *THROUGHPUT_SETS, "compiled=on"],
            "ppo.py",
            THROUGHPUT_FLAGS,
            steps or 1_000_000,
            f"{CLIP_SCHEDULE}; {VALUE_LOSS}; the platform trains on its compiled path (JAX "
            "program over its JAX CartPole port, one XLA thread, compilation included)",
        ),
        "cartpole_compiled": Row(
            "cartpole_compiled",
            "CartPole-v1, specs/cartpole.yaml's hyperparameters, evaluation off, compiled path",
            "specs/cartpole.yaml",
            [*EVAL_OFF, "compiled=on"],
            "ppo.py",
            CARTPOLE_FLAGS,
            steps or 100_000,
            f"{CLIP_SCHEDULE}; {VALUE_LOSS}; the platform trains on its compiled path",
        ),
        "atari": Row(
            "atari",
            "Breakout, ppo_atari.py's defaults (8 envs x 128 steps, Nature CNN), EnvPool",
            "specs/breakout_cleanrl.yaml",
            [],
            "ppo_atari.py",
            ["--env-id", "BreakoutNoFrameskip-v4"],
            steps or 50_000,
            "CleanRL's env: gymnasium SyncVectorEnv over SB3's Python Atari wrappers; the "
            f"platform's: EnvPool's C++ pool with the same preprocessing; {VALUE_LOSS}; value "
            "clipping: CleanRL takes max(clipped, unclipped) loss, SB3 the clipped value's",
        ),
        "halfcheetah": Row(
            "halfcheetah",
            "HalfCheetah-v5, ppo_continuous_action.py's defaults",
            "specs/halfcheetah_cleanrl.yaml",
            [],
            "ppo_continuous_action.py",
            ["--env-id", "HalfCheetah-v5"],
            steps or 100_000,
            "value clipping: CleanRL takes max(clipped, unclipped) loss, SB3 the clipped "
            f"value's; {VALUE_LOSS}; SB3's VecNormalize vs gymnasium's normalize wrappers",
        ),
    }


def platform_command(row: Row, seed: int) -> list[str]:
    exe = Path(sys.executable).with_name("ppo-platform")
    sets = [*row.sets, f"budget.total_timesteps={row.steps}", f"budget.seed={seed}"]
    return [str(exe), "run", row.spec, *(a for s in sets for a in ("--set", s)), "--quiet"]


def cleanrl_command(row: Row, seed: int) -> list[str]:
    flags = [*row.flags, "--total-timesteps", str(row.steps), "--seed", str(seed)]
    return [str(CLEANRL_PYTHON), str(CLEANRL_DIR / row.script), *flags, "--no-cuda"]


def run_once(command: list[str], env: dict[str, str], cwd: Path) -> dict:
    """One whole process: wall, CPU (user + sys of the child, os.wait4) and its final return."""
    sample = run_process(command, env, cwd, keep_stdout=True)
    return {**sample, "final_return": final_return(sample.pop("stdout"))}


def final_return(stdout: str) -> float | None:
    """The platform's final evaluation return, or the mean of CleanRL's last 10 episodes."""
    found = re.search(r"final eval return ([-\d.]+)", stdout)
    if found:
        return float(found.group(1))
    episodes = [float(x) for x in re.findall(r"episodic_return=\[?([-\d.e]+)", stdout)]
    return statistics.mean(episodes[-10:]) if episodes else None


def bench_row(row: Row, pairs: int, seeds: list[int], warmup: bool) -> dict:
    home = Path(tempfile.mkdtemp(prefix="cleanrl_ab_"))
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PPO_PLATFORM_HOME": str(home),
        "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
    }
    tools = {
        "ppo-platform": (platform_command, ROOT),
        "cleanrl": (cleanrl_command, home),  # CleanRL writes runs/ into its working directory
    }

    def variant(make, cwd):  # type: ignore[no-untyped-def]
        def one(pair: int) -> dict:
            seed = seeds[pair % len(seeds)]
            return {**run_once(make(row, seed), env, cwd), "seed": seed}

        return one

    # The warm-up (untimed: page cache, bytecode, MLflow database) runs the first seed.
    samples = alternate(
        {name: variant(make, cwd) for name, (make, cwd) in tools.items()},
        pairs,
        warmup=warmup,
        label=f"{row.name} ",
    )
    result: dict = {"row": row.name, "description": row.description, "env_steps": row.steps}
    result["differences"] = row.differences
    result["commands"] = {
        name: shlex.join(make(row, seeds[0])).replace(str(ROOT) + "/", "")
        for name, (make, _) in tools.items()
    }
    for name, runs in samples.items():
        result[name] = {
            "samples": runs,
            **summarize(runs, ("wall_s", "cpu_s")),
            "steps_per_s": row.steps / statistics.median(s["wall_s"] for s in runs),
            "final_returns": {str(s["seed"]): s["final_return"] for s in runs},
        }
    ours, theirs = result["ppo-platform"], result["cleanrl"]
    result["wall_ratio"] = ours["wall_s"]["median"] / theirs["wall_s"]["median"]
    result["cpu_ratio"] = ours["cpu_s"]["median"] / theirs["cpu_s"]["median"]
    return result


def _returns(side: dict) -> str:
    """`IQM 500.0 [500.0, 500.0] (95% CI, 3 seeds) {'0': 500.0, ...}`, or `(1 seed)`."""
    from ppo_platform.reports.statistics import describe_scores

    values = [v for v in side["final_returns"].values() if v is not None]
    return f"{describe_scores(values)} {side['final_returns']}" if values else "none"


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        *header("Whole-process benchmark: ppo-platform vs CleanRL's single-file PPO", report),
        f"Load: before `{m['uptime_before']}`; after `{report['uptime_after']}`.",
        f"CleanRL: commit {report['cleanrl_commit']}, patched for gymnasium 1.x at copy time: "
        + "; ".join(report["patches"])
        + ".",
        "",
        "Medians (min-max) of whole processes, alternating pairs (A B, B A, ...), one thread "
        "each; wall and CPU (user + sys) in seconds; ratio = ppo-platform / CleanRL.",
        "",
        "| row | env steps | pairs | ppo-platform wall | CleanRL wall | wall ratio | "
        "ppo-platform CPU | CleanRL CPU | CPU ratio | env steps/s (platform / CleanRL) | "
        "load during |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        ours, theirs = r["ppo-platform"], r["cleanrl"]
        loads = [s["load1_at_start"] for t in (ours, theirs) for s in t["samples"]]
        lines.append(
            f"| {r['description']} | {r['env_steps']} | {len(ours['samples'])} | "
            f"{cell(ours['wall_s'], 1)} | {cell(theirs['wall_s'], 1)} | {r['wall_ratio']:.2f}x | "
            f"{cell(ours['cpu_s'], 1)} | {cell(theirs['cpu_s'], 1)} | {r['cpu_ratio']:.2f}x | "
            f"{ours['steps_per_s']:.0f} / {theirs['steps_per_s']:.0f} | "
            f"{min(loads):.1f}-{max(loads):.1f} |"
        )
    lines += ["", "Final returns by seed (platform: final greedy evaluation episode; CleanRL: "
              "mean of its last 10 training episodes), each side's IQM over seeds with its 95% "
              "bootstrap interval (docs/guides/comparing-runs.md):", ""]  # fmt: skip
    for r in report["rows"]:
        lines.append(
            f"- {r['row']}: ppo-platform {_returns(r['ppo-platform'])}, "
            f"CleanRL {_returns(r['cleanrl'])}"
        )
    lines += ["", "Commands (seed of the first pair) and what differs:", ""]
    for r in report["rows"]:
        lines += [f"- {r['row']}: `{c}`" for c in r["commands"].values()]
        lines.append(f"  - differences: {r['differences']}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=["cartpole", "throughput", "halfcheetah"])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="env steps of every row")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="pair i: i-th")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed first runs")
    parser.add_argument("--out", default="cleanrl_ab", help="results file stem")
    parser.add_argument("--copy-scripts", metavar="REPO", help="copy CleanRL's scripts and exit")
    parser.add_argument("--ref", default="HEAD", help="CleanRL commit for --copy-scripts")
    args = parser.parse_args()
    if args.copy_scripts:
        return copy_scripts(args.copy_scripts, args.ref)
    table = rows(args.steps)
    unknown = sorted(set(args.rows) - set(table))
    if unknown:
        sys.exit(f"--rows: unknown {unknown}; choose from {sorted(table)}")
    missing = [table[n].script for n in args.rows if not (CLEANRL_DIR / table[n].script).exists()]
    if not CLEANRL_PYTHON.exists() or missing:
        sys.exit(f"CleanRL is not set up ({missing or 'no venv'}): run `make bench-cleanrl-venv`")
    if "atari" in args.rows:
        ale = package_versions(CLEANRL_PYTHON, ["ale-py"]).get("ale-py", "not installed")
        if ale == "not installed":
            sys.exit(ATARI_SETUP)
    report: dict = {
        "command": command_line("benchmarks.throughput.cleanrl_ab"),
        "machine": machine(),
        "versions": versions("torch", "stable_baselines3", "gymnasium", "envpool", "ale-py"),
        "cleanrl_commit": (CLEANRL_DIR / "COMMIT").read_text().strip()[:8],
        "patches": sorted({f"{why}" for _, _, _, why in PATCHES}),
        "rows": [],
    }
    theirs = package_versions(CLEANRL_PYTHON, ["torch", "gymnasium", "tyro", "ale-py"])
    report["versions"].update({f"{k} (CleanRL venv)": v for k, v in theirs.items()})
    for name in args.rows:
        if name in table:
            report["rows"].append(
                bench_row(table[name], args.pairs, args.seeds, not args.no_warmup)
            )
    write_results(report, args.out, markdown)


if __name__ == "__main__":
    main()
