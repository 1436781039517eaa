"""Re-judge a corpus result's stored runs with today's doctor, without training anything: each
row's run is read back from the homes a `--keep` folder kept, diagnosed again, and the page
written again. Recovery rows keep their patched re-run (re-run the corpus to redo those).

    python -m benchmarks.learning.doctor_corpus_rejudge KEEP_FOLDER [--stem doctor_corpus]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from benchmarks.harness import RESULTS
from benchmarks.learning.doctor_corpus import diagnosis_of, finish


def rejudge(row: dict, work: Path) -> None:
    """`row` updated in place from a fresh diagnosis of its stored run."""
    if not row.get("run_id") or not row.get("home"):
        return
    verdict = diagnosis_of(row["run_id"], work / row["home"])
    causes = verdict["causes"]
    top = causes[0] if causes else None
    row["causes"] = [f"{c['cause']} ({c['confidence']:.0%})" for c in causes]
    row["top"] = top["cause"] if top else None
    row["confidence"] = top["confidence"] if top else None
    row["thin_evidence"] = verdict.get("thin_evidence")
    if row["group"] == "fault":
        row["detected"] = row["top"] == row["planted"]
    else:
        row["critical_alerts"] = verdict["critical_alerts"]
        row["false_alarm"] = bool(causes) or row["critical_alerts"] > 0 or row["exit"] != 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keep", type=Path, help="the corpus's --keep folder")
    parser.add_argument("--stem", default="doctor_corpus", help="results file stem")
    args = parser.parse_args()
    os.environ.setdefault("PPO_PLATFORM_LM_DIR", str(args.keep / "lm"))  # as the corpus set it
    report = json.loads((RESULTS / f"{args.stem}.json").read_text())
    for row in report["runs"]:
        rejudge(row, args.keep)
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    report["rejudged"] = (
        f"python -m benchmarks.learning.doctor_corpus_rejudge {args.keep} ({when} UTC)"
    )
    finish(report, args.stem)


if __name__ == "__main__":
    main()
