"""An LM spec's inputs checked before anything loads: model folders, tokenizer, prompt files,
positions, and the memory the run would need against the budget.

Only small JSON files are read here (config.json, tokenizer.json, the prompt lines); no model
code runs and no weights are opened. Weights are accepted as safetensors only: nothing from a
folder a user chose is unpickled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppo_platform.errors import SpecIssue
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.lm import LMExperimentSpec, PromptsSpec
from ppo_platform.spec.resources import PROCESS_BASE, RESOURCE_RULE, budgets, human

MAX_JSON_BYTES = 8 * 2**20
MAX_PROMPT_FILE_BYTES = 64 * 2**20
MAX_PROMPT_LINES = 1_000_000
LM_PROCESS_BASE = PROCESS_BASE + 300 * 2**20  # transformers and tokenizers on top
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


@dataclass(frozen=True)
class ModelFacts:
    """What validation learned about a model folder without loading it."""

    folder: Path
    config: dict[str, Any]
    weight_bytes: int

    @property
    def positions(self) -> int | None:
        for name in ("n_positions", "max_position_embeddings", "n_ctx"):
            value = self.config.get(name)
            if isinstance(value, int):
                return value
        return None

    def number(self, *names: str, default: int = 0) -> int:
        for name in names:
            value = self.config.get(name)
            if isinstance(value, int):
                return value
        return default


class InputProblem(Exception):
    """One input that cannot be used; carries its SpecIssue."""

    def __init__(self, issue: SpecIssue) -> None:
        super().__init__(issue.message)
        self.issue = issue


def _problem(path: str, value: object, message: str, fix: str) -> InputProblem:
    return InputProblem(SpecIssue(path, message, value, fix=fix))


def resolve(value: str, field: str, root: Path, from_outside: bool) -> Path:
    """A spec path: relative ones inside `root`; absolute ones only when not from outside.

    From outside (the service) nothing is looked at before the path is known to stay inside
    the LM folder, and no message names the server's folders: what lies outside it, or
    whether it exists, is never told."""
    candidate = Path(value) if from_outside else Path(value).expanduser()
    if candidate.is_absolute() and not from_outside:
        return candidate.resolve()
    if candidate.is_absolute():
        raise _problem(
            field,
            value,
            "is an absolute path; paths sent to the service are relative to its LM folder.",
            "give the path relative to the LM folder, e.g. demo/prompts.jsonl.",
        )
    if ".." in candidate.parts or value.startswith("~"):
        raise _problem(
            field,
            value,
            "names a place outside the LM folder ('..' or '~').",
            "give a path relative to the LM folder (PPO_PLATFORM_LM_DIR), without '..'.",
        )
    path = (root / candidate).resolve()
    if not path.is_relative_to(root.resolve()):
        raise _problem(
            field, value, "leads outside the LM folder (through a symbolic link).", "remove it."
        )
    return path


def shown(path: Path, root: Path) -> str:
    """A checked path as a message may name it: relative to the LM folder when inside it
    (never the server's folders); a path outside it only a command-line user could give."""
    resolved = root.resolve()
    return str(path.relative_to(resolved)) if path.is_relative_to(resolved) else str(path)


def _read_json(path: Path, field: str, value: str) -> Any:
    if not path.is_file() or path.stat().st_size > MAX_JSON_BYTES:
        raise _problem(
            field,
            value,
            f"has no readable {path.name} (at most {human(MAX_JSON_BYTES)}).",
            "point at a folder written by save_pretrained (model and tokenizer).",
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _problem(
            field, value, f"{path.name} is not valid JSON ({error}).", "rewrite it."
        ) from None


def check_model_folder(value: str, field: str, root: Path, from_outside: bool) -> ModelFacts:
    """A transformers folder: config.json with a model_type, safetensors weights, no code."""
    folder = resolve(value, field, root, from_outside)
    if not folder.is_dir():
        raise _problem(
            field,
            value,
            f"is not a folder ({shown(folder, root)} in the LM folder).",
            "give a model folder under the LM folder, e.g. one `ppo-platform lm init-demo` wrote.",
        )
    config = _read_json(folder / "config.json", field, value)
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise _problem(field, value, "config.json has no model_type.", "save it with transformers.")
    if "auto_map" in config:
        raise _problem(
            field,
            value,
            "config.json asks for custom model code (auto_map); it is never run.",
            "use a model whose architecture ships with transformers.",
        )
    weights = [folder / name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not weights:
        raise _problem(
            field,
            value,
            "has no model.safetensors (pickled .bin weights are not loaded).",
            "save the model with save_pretrained(safe_serialization=True).",
        )
    size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    return ModelFacts(folder, config, size)


def check_tokenizer(facts: ModelFacts, field: str, value: str) -> None:
    """The folder's fast tokenizer exists and its ids fit the model's embedding table."""
    tokenizer = _read_json(facts.folder / "tokenizer.json", field, value)
    vocab = tokenizer.get("model", {}).get("vocab") if isinstance(tokenizer, dict) else None
    if not isinstance(vocab, dict):
        raise _problem(field, value, "tokenizer.json has no vocabulary.", "save the tokenizer.")
    ids = [i for i in vocab.values() if isinstance(i, int)]
    ids += [t.get("id", 0) for t in tokenizer.get("added_tokens") or [] if isinstance(t, dict)]
    model_vocab = facts.number("vocab_size")
    if ids and model_vocab and max(ids) >= model_vocab:
        raise _problem(
            field,
            value,
            f"the tokenizer does not match the model: token id {max(ids)} but the model has "
            f"{model_vocab} embeddings.",
            "save the tokenizer the model was trained with into the same folder.",
        )


def check_prompts(
    spec: PromptsSpec, field: str, root: Path, from_outside: bool, answer: bool
) -> int:
    """A JSONL file whose every line is an object with the prompt (and answer) field; its size."""
    path = resolve(spec.path, f"{field}.path", root, from_outside)
    if not path.is_file():
        raise _problem(
            f"{field}.path",
            spec.path,
            f"is not a file ({shown(path, root)} in the LM folder).",
            "give a JSONL file.",
        )
    if path.stat().st_size > MAX_PROMPT_FILE_BYTES:
        raise _problem(
            f"{field}.path", spec.path, f"is over {human(MAX_PROMPT_FILE_BYTES)}.", "split it."
        )
    count = 0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise _problem(
            f"{field}.path", spec.path, "is not UTF-8 text.", "save it as UTF-8."
        ) from None
    if len(lines) > MAX_PROMPT_LINES:
        raise _problem(f"{field}.path", spec.path, "has too many lines.", "split it.")
    for number, line in enumerate(lines, start=1):
        if line.strip():
            count += 1
            _check_prompt_line(line, number, spec, field, answer)
    if count == 0:
        raise _problem(f"{field}.path", spec.path, "holds no prompts.", "add JSONL lines.")
    return count


def _check_prompt_line(line: str, number: int, spec: PromptsSpec, field: str, answer: bool) -> None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        record = None
    where = f"{field}.path"
    if not isinstance(record, dict):
        raise _problem(
            where,
            spec.path,
            f"line {number} is not a JSON object (the file must be JSONL).",
            'write one object per line, e.g. {"prompt": "12+7=", "answer": "19"}.',
        )
    if not isinstance(record.get(spec.prompt_field), str) or not record[spec.prompt_field]:
        raise _problem(
            f"{field}.prompt_field",
            spec.prompt_field,
            f"line {number} of {spec.path} has no non-empty string under this key.",
            "name the key that holds the prompt text.",
        )
    if answer and (spec.answer_field is None or not isinstance(record.get(spec.answer_field), str)):
        raise _problem(
            f"{field}.answer_field",
            spec.answer_field,
            f"line {number} of {spec.path} has no string answer, and exact_answer needs one.",
            "name the key holding the reference answer, or use another reward.",
        )


def estimate_memory(spec: LMExperimentSpec, policy: ModelFacts, others: int) -> dict[str, int]:
    """Upper-side bytes of a run: weights (policy, its value head with GAE), gradients and
    Adam's two moments, the reference and reward model, the generation batch and update
    activations (every response of a rollout: prompts x group_size)."""
    weights = policy.weight_bytes
    hidden = policy.number("n_embd", "hidden_size", default=1)
    layers = policy.number("n_layer", "num_hidden_layers", default=1)
    vocab = policy.number("vocab_size", default=1)
    length = (policy.positions or 0) or spec.lm.generation.max_new_tokens * 4
    rollout = spec.responses_per_update  # prompts x responses per prompt
    # Sampling keeps the KV cache and one step's logits; the rollout's forward passes keep
    # (B, L, V) log-probs; the update keeps activations of a minibatch for backward.
    generation = rollout * length * (2 * layers * hidden + 3 * vocab) * 4
    update = 2 * spec.update.minibatch_size * length * (16 * layers * hidden + 3 * vocab) * 4
    return {
        "policy + value head": weights,
        "gradients + Adam": 3 * weights,
        "reference + reward model": others,
        "generation batch": generation,
        "update activations": update,
        "process": LM_PROCESS_BASE,
    }


def lm_run_memory(spec: LMExperimentSpec, settings: Settings) -> int:
    """Estimated bytes of an accepted LM run (its inputs were checked when it was accepted;
    the job service's memory admission adds it to the running jobs')."""
    root = settings.lm_folder
    policy = check_model_folder(spec.lm.model.policy, "lm.model.policy", root, False)
    others = 0
    reference = spec.lm.model.reference
    if reference == "initial":  # with LoRA, the base with the adapter off: no second copy
        others += policy.weight_bytes if spec.lm.lora is None else 0
    elif reference != "none":
        others += check_model_folder(reference, "lm.model.reference", root, False).weight_bytes
    if spec.lm.model.reward_model is not None:
        reward_model = spec.lm.model.reward_model
        others += check_model_folder(
            reward_model, "lm.model.reward_model", root, False
        ).weight_bytes
    return sum(estimate_memory(spec, policy, others).values())


def lm_input_issues(
    spec: LMExperimentSpec, settings: Settings | None = None, from_outside: bool = False
) -> list[SpecIssue]:
    """Every input problem of an LM spec, the first per input; then the memory budget."""
    settings = settings or get_settings()
    root = settings.lm_folder
    issues: list[SpecIssue] = []
    policy: ModelFacts | None = None
    others = 0
    try:
        policy = check_model_folder(spec.lm.model.policy, "lm.model.policy", root, from_outside)
        check_tokenizer(policy, "lm.model.policy", spec.lm.model.policy)
        positions = policy.positions
        if positions is not None and spec.lm.generation.max_new_tokens >= positions:
            raise _problem(
                "lm.generation.max_new_tokens",
                spec.lm.generation.max_new_tokens,
                f"responses this long do not fit the model's {positions} positions "
                "(with a prompt).",
                f"use fewer than {positions} tokens, minus the longest prompt's.",
            )
    except InputProblem as problem:
        issues.append(problem.issue)
    issues += _lora_issues(spec, policy)
    reference = spec.lm.model.reference
    # With LoRA the reference is the base with the adapter off: no second copy in memory.
    if reference == "initial" and policy is not None:
        others += policy.weight_bytes if spec.lm.lora is None else 0
    elif reference not in ("initial", "none"):
        try:
            others += check_model_folder(
                reference, "lm.model.reference", root, from_outside
            ).weight_bytes
        except InputProblem as problem:
            issues.append(problem.issue)
    if spec.lm.model.reward_model is not None:
        try:
            others += check_model_folder(
                spec.lm.model.reward_model, "lm.model.reward_model", root, from_outside
            ).weight_bytes
        except InputProblem as problem:
            issues.append(problem.issue)
    needs_answer = any(term.name == "exact_answer" for term in spec.lm.rewards)
    for field, prompts in (
        ("lm.prompts", spec.lm.prompts),
        ("lm.eval_prompts", spec.lm.eval_prompts),
    ):
        if prompts is None:
            continue
        try:
            check_prompts(
                prompts, field, root, from_outside, needs_answer or field == "lm.eval_prompts"
            )
        except InputProblem as problem:
            issues.append(problem.issue)
    if policy is not None and not issues:
        issues += memory_refusal(spec, policy, others, settings)
    return issues


def _lora_issues(spec: LMExperimentSpec, policy: ModelFacts | None) -> list[SpecIssue]:
    if policy is None or spec.lm.lora is None:
        return []
    from ppo_platform.spec.lm_lora import lora_target_issues

    return lora_target_issues(spec.lm.lora, policy.folder)


def memory_refusal(
    spec: LMExperimentSpec, policy: ModelFacts, others: int, settings: Settings
) -> list[SpecIssue]:
    parts = estimate_memory(spec, policy, others)
    total = sum(parts.values())
    budget, _ = budgets(settings)
    if total <= budget:
        return []
    described = ", ".join(f"{name} {human(size)}" for name, size in parts.items())
    return [
        SpecIssue(
            "lm",
            f"refused: the run would need about {human(total)} of memory ({described}), over "
            f"the budget of {human(budget)}.",
            fix="use fewer lm.prompts_per_update, a smaller update.minibatch_size or "
            "max_new_tokens, a smaller model; or raise PPO_PLATFORM_MEMORY_BUDGET_BYTES.",
            rule=RESOURCE_RULE,
        )
    ]
