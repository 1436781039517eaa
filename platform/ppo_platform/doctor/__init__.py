"""The PPO doctor: a run's metrics in, its likely root causes out, each with its evidence and,
where a spec change fixes it, a patch (docs/guides/diagnostics.md, "The doctor").

    diagnose(series, facts) -> Diagnosis      pure; callers load the metrics
    facts_from_spec(spec), failure_from_tags(tags), patched_spec(spec, finding)
"""

from ppo_platform.doctor.engine import diagnose
from ppo_platform.doctor.facts import facts_from_spec, failure_from_tags, patched_spec
from ppo_platform.doctor.vocabulary import (
    CAUSES,
    CauseId,
    Diagnosis,
    Failure,
    Finding,
    NotJudged,
    RunFacts,
)

__all__ = [
    "CAUSES",
    "CauseId",
    "Diagnosis",
    "Failure",
    "Finding",
    "NotJudged",
    "RunFacts",
    "diagnose",
    "facts_from_spec",
    "failure_from_tags",
    "patched_spec",
]
