"""`algorithm: ppo_lm` specs: the shared refusal rules, the LM rules, and bad inputs refused
before anything loads (field, value and fix named)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ppo_platform.errors import SpecError
from ppo_platform.settings import get_settings
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.lm_loader import validate_lm_data
from ppo_platform.spec.rules import refusals
from ppo_platform.spec.workloads import load_any_spec
from ppo_platform.trainers.lm.tiny import build_tiny_gpt2, save_model, train_char_tokenizer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An LM folder holding a tiny model and prompts, set as PPO_PLATFORM_LM_DIR."""
    root = tmp_path_factory.mktemp("lm")
    tokenizer = train_char_tokenizer(["0123456789+="])
    save_model(build_tiny_gpt2(tokenizer, n_layer=1, n_embd=16, n_head=2), tokenizer, root / "m")
    rows = [{"prompt": "1+2=", "answer": "3", "task": "a"}, {"prompt": "4+4=", "answer": "8"}]
    (root / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("PPO_PLATFORM_LM_DIR", str(root))
    monkeypatch.delenv("PPO_PLATFORM_MEMORY_BUDGET_BYTES", raising=False)
    get_settings.cache_clear()
    yield root
    monkeypatch.undo()
    get_settings.cache_clear()


BASE: dict[str, Any] = {
    "name": "lm-test",
    "algorithm": "ppo_lm",
    "lm": {
        "model": {"policy": "m"},
        "prompts": {"path": "p.jsonl"},
        "rewards": [{"name": "exact_answer"}],
        "generation": {"max_new_tokens": 4},
        "reduction": "token_mean",
    },
}


def spec_with(**changes: Any) -> dict[str, Any]:
    """BASE with dotted-path changes (value None deletes the key)."""
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return data


def issues_of(data: dict[str, Any], **kwargs: Any) -> list[Any]:
    with pytest.raises(SpecError) as caught:
        validate_lm_data(data, **kwargs)
    return caught.value.issues


def test_a_valid_lm_spec_loads(lm_dir):
    spec = validate_lm_data(BASE)
    assert spec.lm.reduction == "token_mean"
    assert spec.advantage.gamma == 1.0
    assert spec.lm.model.reference == "initial"


@pytest.mark.parametrize(
    ("changes", "path", "rule"),
    [
        ({"update": {"epochs": 31}}, "update.epochs", "unsafe_trust_region"),
        (
            {"surrogate": {"clip_epsilon": 0.35}},
            "surrogate.clip_epsilon.start",
            "unsafe_trust_region",
        ),
        (
            {"surrogate": {"normalize_advantage": False}},
            "surrogate.normalize_advantage",
            "unnormalized_advantages",
        ),
        ({"diagnostics": {"monitor_kl": False}}, "diagnostics.monitor_kl", "unmonitored_run"),
        (
            {"diagnostics": {"monitor_clip_fraction": False}},
            "diagnostics.monitor_clip_fraction",
            "unmonitored_run",
        ),
        ({"lm__reduction": None}, "lm.reduction", "unnamed_reduction"),
        ({"lm__model__reference": "none"}, "lm.kl.beta", "kl_without_reference"),
        ({"advantage": {"estimator": "grpo"}}, "advantage.group_size", "group_of_one"),
        (
            {"advantage": {"estimator": "rloo", "group_size": 1}},
            "advantage.group_size",
            "group_of_one",
        ),
        (
            {"surrogate": {"clip": {"low": 0.2, "high": 0.35}}},
            "surrogate.clip.high",
            "unsafe_trust_region",
        ),
        (
            {"surrogate": {"clip": {"low": 0.2, "high": 0.1}}},
            "surrogate.clip.high",
            "inverted_clip_range",
        ),
    ],
)
def test_refusal_rules_apply_to_lm_specs(lm_dir, changes, path, rule):
    data = spec_with(**{k: v for k, v in changes.items() if "__" in k})
    data.update({k: v for k, v in changes.items() if "__" not in k})
    issues = issues_of(data)
    assert [(i.path, i.rule) for i in issues] == [(path, rule)]


def test_k_30_and_epsilon_0_3_are_allowed(lm_dir):
    data = spec_with()
    data.update({"update": {"epochs": 30}, "surrogate": {"clip_epsilon": 0.3}})
    assert validate_lm_data(data).update.epochs == 30


def test_no_reference_is_fine_without_a_penalty(lm_dir):
    data = spec_with(lm__model__reference="none", lm__kl={"beta": 0.0})
    assert validate_lm_data(data).lm.kl.beta == 0.0


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"lm__model__policy": "missing"}, "lm.model.policy", "is not a folder"),
        ({"lm__prompts__path": "nope.jsonl"}, "lm.prompts.path", "is not a file"),
        ({"lm__prompts__prompt_field": "question"}, "lm.prompts.prompt_field", "line 1"),
        ({"lm__generation__max_new_tokens": 32}, "lm.generation.max_new_tokens", "positions"),
        ({"lm__rewards": [{"name": "bleu"}]}, "lm.rewards.0.name", "Input should be"),
        ({"advantage__estimator": "ppo"}, "advantage.estimator", "'gae', 'grpo' or 'rloo'"),
        ({"surrogate__objective": "sapo"}, "surrogate.objective", "'ppo', 'gspo' or 'cispo'"),
        (
            {"lm__rewards": [{"name": "regex", "params": {"pattern": "("}}]},
            "lm.rewards.0",
            "regular expression",
        ),
        (
            {"lm__rewards": [{"name": "contains", "params": {"txt": "a"}}]},
            "lm.rewards.0",
            "no parameter 'txt'",
        ),
    ],
)
def test_bad_inputs_name_field_value_and_fix(lm_dir, changes, path, words):
    (issue,) = issues_of(spec_with(**changes))
    assert issue.path == path
    assert words in issue.message
    # The fix is in its own field, or (a reward's own check) after the ';' of the message.
    assert issue.fix or "; " in issue.message


def test_a_prompt_file_that_is_not_jsonl_is_refused_with_its_line(lm_dir):
    (lm_dir / "bad.jsonl").write_text('{"prompt": "1+1=", "answer": "2"}\nnot json\n')
    (issue,) = issues_of(spec_with(lm__prompts__path="bad.jsonl"))
    assert issue.path == "lm.prompts.path" and "line 2 is not a JSON object" in issue.message


def test_exact_answer_needs_the_answer_field_on_every_line(lm_dir):
    (lm_dir / "noanswer.jsonl").write_text('{"prompt": "1+1="}\n')
    (issue,) = issues_of(spec_with(lm__prompts__path="noanswer.jsonl"))
    assert issue.path == "lm.prompts.answer_field"
    data = spec_with(lm__prompts__path="noanswer.jsonl", lm__rewards=[{"name": "length_penalty"}])
    assert validate_lm_data(data).lm.prompts.path == "noanswer.jsonl"


def test_a_tokenizer_that_does_not_match_the_model_is_refused(lm_dir):
    big = train_char_tokenizer(["0123456789+=abcdefghijklmnopqrstuvwxyz"])
    small = train_char_tokenizer(["0123456789+="])
    folder = save_model(build_tiny_gpt2(small, n_layer=1, n_embd=16, n_head=2), big, lm_dir / "mm")
    (issue,) = issues_of(spec_with(lm__model__policy=folder.name))
    assert issue.path == "lm.model.policy" and "does not match" in issue.message


def test_pickled_weights_and_custom_code_are_never_loaded(lm_dir):
    folder = lm_dir / "pickled"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    (issue,) = issues_of(spec_with(lm__model__policy="pickled"))
    assert "safetensors" in issue.message
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "auto_map": {}}))
    (issue,) = issues_of(spec_with(lm__model__policy="pickled"))
    assert "custom model code" in issue.message


@pytest.mark.parametrize("policy", ["/etc", "../outside", "m/../../outside"])
def test_from_outside_no_path_leaves_the_lm_folder(lm_dir, policy):
    (issue,) = issues_of(spec_with(lm__model__policy=policy), from_outside=True)
    assert issue.path == "lm.model.policy" and "LM folder" in issue.message
    assert str(lm_dir) not in issue.message  # the server's folders are never named


def test_memory_is_estimated_against_the_budget(lm_dir, monkeypatch):
    monkeypatch.setenv("PPO_PLATFORM_MEMORY_BUDGET_BYTES", str(100 * 2**20))
    get_settings.cache_clear()
    try:
        (issue,) = issues_of(BASE)
    finally:
        monkeypatch.delenv("PPO_PLATFORM_MEMORY_BUDGET_BYTES")
        get_settings.cache_clear()
    assert issue.rule == "resource_budget" and "generation batch" in issue.message


def test_the_shipped_spec_passes_schema_and_rules(lm_dir):
    data = yaml.safe_load((REPO / "specs" / "lm_arithmetic.yaml").read_text())
    spec = LMExperimentSpec.model_validate(data)
    assert refusals(spec) == []
    assert (spec.lm.reduction, spec.advantage.gamma, spec.advantage.gae_lambda) == (
        "token_mean",
        1.0,
        1.0,
    )
    with pytest.raises(SpecError) as caught:  # the demo is not built in this LM folder
        load_any_spec(REPO / "specs" / "lm_arithmetic.yaml")
    assert caught.value.issues[0].path == "lm.model.policy"


def test_a_clip_schedule_is_refused_for_lm_specs(lm_dir):
    data = spec_with()
    data["surrogate"] = {"clip_epsilon": {"start": 0.2, "schedule": "linear"}}
    (issue,) = issues_of(data)
    assert issue.path == "surrogate" and "constant" in issue.message


@pytest.mark.parametrize("estimator", ["grpo", "rloo"])
def test_a_group_estimator_spec_builds_no_critic_and_counts_its_responses(lm_dir, estimator):
    data = spec_with(lm__prompts_per_update=6)
    data["advantage"] = {"estimator": estimator, "group_size": 4}
    spec = validate_lm_data(data)
    assert spec.critic_free and spec.responses_per_update == 24


def test_a_group_of_one_refusal_names_the_value_and_the_fix(lm_dir):
    data = spec_with()
    data["advantage"] = {"estimator": "grpo", "group_size": 1}
    (issue,) = issues_of(data)
    assert (issue.path, issue.value) == ("advantage.group_size", 1)
    assert "group of one response" in issue.message and "2 or more" in (issue.fix or "")


def test_gae_keeps_one_response_per_prompt_by_default(lm_dir):
    spec = validate_lm_data(BASE)
    assert (spec.advantage.estimator, spec.advantage.group_size) == ("gae", 1)
    assert not spec.critic_free and spec.responses_per_update == 32


def test_clip_higher_at_the_limit_is_allowed_and_reaches_the_trainer(lm_dir):
    data = spec_with()
    data["surrogate"] = {"objective": "cispo", "clip": {"low": 0.2, "high": 0.3}}
    spec = validate_lm_data(data)
    assert spec.surrogate.clip_bounds == (0.2, 0.3)
    assert LMExperimentSpec.model_validate(spec.model_dump()) == spec  # the resolved spec loads


def test_each_clip_bound_above_the_limit_is_refused(lm_dir):
    data = spec_with()
    data["surrogate"] = {"clip": {"low": 0.31, "high": 0.32}}
    issues = issues_of(data)
    assert [(i.path, i.value, i.rule) for i in issues] == [
        ("surrogate.clip.low", 0.31, "unsafe_trust_region"),
        ("surrogate.clip.high", 0.32, "unsafe_trust_region"),
    ]
    assert "at most 0.3" in (issues[1].fix or "")


def test_an_inverted_clip_range_names_both_bounds_and_the_fix(lm_dir):
    data = spec_with()
    data["surrogate"] = {"clip": {"low": 0.2, "high": 0.1}}
    (issue,) = issues_of(data)
    assert issue.value == 0.1 and "below clip.low 0.2" in issue.message
    assert "at least 0.2" in (issue.fix or "")


def test_clip_bounds_beside_a_clip_epsilon_are_refused(lm_dir):
    data = spec_with()
    data["surrogate"] = {"clip_epsilon": 0.1, "clip": {"low": 0.2, "high": 0.28}}
    (issue,) = issues_of(data)
    assert issue.path == "surrogate.clip_epsilon" and "remove" in (issue.fix or "")


def test_a_search_space_over_clip_high_above_the_limit_is_refused(lm_dir):
    spec = LMExperimentSpec.model_validate(
        {
            **spec_with(),
            "surrogate": {"clip": {"low": 0.2, "high": 0.28}},
            "tune": {
                "n_trials": 2,
                "space": {"surrogate.clip.high": {"type": "float", "low": 0.2, "high": 0.4}},
            },
        }
    )
    (issue,) = [i for i in refusals(spec) if i.rule == "unsafe_search_space"]
    assert issue.path == "tune.space.surrogate.clip.high.high" and issue.value == 0.4


def test_k2_in_the_loss_and_beta_zero_are_accepted(lm_dir):
    spec = validate_lm_data(spec_with(lm__kl={"estimator": "k2", "placement": "loss"}))
    assert (spec.lm.kl.estimator, spec.lm.kl.placement) == ("k2", "loss")
    assert validate_lm_data(spec_with(lm__kl={"beta": 0.0})).lm.kl.beta == 0.0


def test_an_adaptive_beta_from_zero_is_refused(lm_dir):
    (issue,) = issues_of(spec_with(lm__kl={"beta": 0.0, "target": 1.0}))
    assert (issue.path, issue.value) == ("lm.kl.beta", 0.0) and "above 0" in (issue.fix or "")


def test_an_unknown_kl_placement_names_the_choices(lm_dir):
    (issue,) = issues_of(spec_with(lm__kl={"placement": "advantage"}))
    assert issue.path == "lm.kl.placement" and "'reward' or 'loss'" in issue.message


def test_a_lora_target_the_model_lacks_is_refused_at_validate(lm_dir):
    data = spec_with(lm__lora={"rank": 4, "target_modules": ["c_attn", "q_proj"]})
    (issue,) = issues_of(data)
    assert (issue.path, issue.value) == ("lm.lora.target_modules", ["c_attn", "q_proj"])
    assert "no module named q_proj" in issue.message
    assert "c_attn" in (issue.fix or "") and "c_fc" in (issue.fix or "")


def test_lora_and_the_tis_cap_reach_the_trainer_and_the_reference_is_not_counted(lm_dir):
    from ppo_platform.spec.lm_inputs import lm_run_memory
    from ppo_platform.trainers.lm.lora import AdapterOffReference
    from ppo_platform.training.lm_build import build_trainer

    full = validate_lm_data(BASE)
    data = spec_with(
        lm__lora={"rank": 2, "alpha": 4, "target_modules": ["c_attn"]},
        lm__off_policy={"truncated_is_cap": 2.0},
    )
    spec = validate_lm_data(data)
    settings = get_settings()
    weights = sum(p.stat().st_size for p in (lm_dir / "m").glob("*.safetensors"))
    assert lm_run_memory(full, settings) - lm_run_memory(spec, settings) == weights
    trainer = build_trainer(spec, settings)
    assert isinstance(trainer.reference, AdapterOffReference)
    assert trainer.rollout_settings.tis_cap == 2.0
    assert trainer.lora is not None and trainer.lora.rank == 2


def test_a_tis_cap_below_one_is_refused(lm_dir):
    (issue,) = issues_of(spec_with(lm__off_policy={"truncated_is_cap": 0.5}))
    assert issue.path == "lm.off_policy.truncated_is_cap" and issue.value == 0.5
