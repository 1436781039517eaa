"""A study's held-out verification, as events and resumable: results are kept in the study's
user attributes, so a resumed study re-verifies only trials not verified with the same seeds
and episodes before (the attribute is keyed by them)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ppo_platform.tuning.events import StudyListener, TrialVerified, VerifyStarted
from ppo_platform.tuning.verify import VerifyConfig, spread, top_trials, verify_trials

if TYPE_CHECKING:
    import optuna

VERIFIED_ATTR = "ppo_platform:verified"


def verify_key(config: VerifyConfig) -> str:
    """What a held-out result depends on besides the trial: the seeds and the episodes."""
    tune = config.spec.tune
    assert tune is not None and tune.verify is not None
    episodes = tune.verify.episodes or config.spec.evaluation.episodes
    return json.dumps({"seeds": list(tune.verify.seeds), "episodes": episodes})


def stored_results(study: optuna.Study, key: str) -> dict[int, dict[str, Any]]:
    """Held-out results saved by an earlier run of this study with the same `key`."""
    saved = study.user_attrs.get(VERIFIED_ATTR) or {}
    if saved.get("key") != key:
        return {}
    return {int(n): result for n, result in saved.get("trials", {}).items()}


def verify_study(
    config: VerifyConfig,
    study: optuna.Study,
    workers: int,
    on_event: StudyListener | None = None,
) -> list[dict[str, Any]]:
    """Verify the study's top trials (reusing results saved earlier); best searched first."""
    tune = config.spec.tune
    assert tune is not None and tune.verify is not None
    tell = on_event or (lambda _: None)
    key = verify_key(config)
    known = {  # the spread anew: the statistics or verify.solve_threshold may have changed
        n: {**r, **spread(r["seed_values"], tune.verify.solve_threshold)}
        for n, r in stored_results(study, key).items()
        if r.get("held_out_value") is not None
    }
    trials = top_trials(study, config.spec)
    pending = [t for t in trials if t.number not in known]
    reused = tuple(t.number for t in trials if t.number in known)
    tell(VerifyStarted(tuple(t.number for t in trials), tuple(tune.verify.seeds), reused))
    for number in reused:
        tell(TrialVerified.of(known[number], reused=True))

    def finished(result: dict[str, Any]) -> None:
        known[int(result["number"])] = result
        if result.get("held_out_value") is not None:  # failures are tried again on resume
            _save(study, key, known)
        tell(TrialVerified.of(result))

    fresh = {r["number"]: r for r in verify_trials(config, pending, workers, finished)}
    return [known.get(t.number) or fresh[t.number] for t in trials]


def _save(study: optuna.Study, key: str, known: dict[int, dict[str, Any]]) -> None:
    trials = {str(n): r for n, r in known.items() if r.get("held_out_value") is not None}
    study.set_user_attr(VERIFIED_ATTR, {"key": key, "trials": trials})
