"""Loading: every bad input gets its error at the right line; overrides; YAML round trip.

YAML texts start right after the opening quotes, so the first line of each text is line 1.
"""

from __future__ import annotations

import math
import resource
import sys
import time
from textwrap import dedent

import pytest

from ppo_platform.errors import SpecError
from ppo_platform.spec.loader import MAX_SPEC_BYTES, dump_spec, load_spec, load_spec_text


def yaml_text(text: str) -> str:
    return dedent(text).lstrip("\n")


# --- unknown keys and wrong types ---------------------------------------------------------


def test_unknown_key_is_located_and_suggests_the_close_match(single_issue):
    issue = single_issue(
        yaml_text("""
            name: run
            env: CartPole-v1
            update:
              epochz: 4
        """)
    )
    assert (issue.path, issue.line, issue.column) == ("update.epochz", 4, 3)
    assert issue.message == "unknown key."
    assert issue.fix.startswith("did you mean 'epochs'?")
    assert "Allowed keys: epochs, learning_rate, max_grad_norm, minibatch_size." in issue.fix


def test_unknown_top_level_key_lists_the_sections(single_issue):
    issue = single_issue("name: run\nenv: CartPole-v1\nsurogate: {}\n")
    assert (issue.path, issue.line) == ("surogate", 3)
    assert "did you mean 'surrogate'?" in issue.fix


@pytest.mark.parametrize(
    ("raw", "value"),
    [("ten", "ten"), ('"10"', "10"), ("10.5", 10.5), ("true", True)],
    ids=["word", "quoted_number", "float", "bool"],
)
def test_epochs_of_the_wrong_type_are_rejected(single_issue, raw, value):
    issue = single_issue(f"name: run\nenv: CartPole-v1\nupdate:\n  epochs: {raw}\n")
    assert (issue.path, issue.line, issue.value) == ("update.epochs", 4, value)
    assert issue.value is not None and type(issue.value) is type(value)
    assert "valid integer" in issue.message


def test_string_for_a_float_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "advantage:\n  gamma: high\n")
    assert (issue.path, issue.line, issue.value) == ("advantage.gamma", 4, "high")


def test_missing_required_field_is_named(single_issue):
    issue = single_issue("name: run\n")
    assert (issue.path, issue.message) == ("env", "required field is missing.")


# --- document shape -------------------------------------------------------------------------


def test_duplicate_key_points_at_the_second_occurrence(single_issue):
    issue = single_issue(
        yaml_text("""
            name: run
            env: CartPole-v1
            update:
              epochs: 4
              minibatch_size: 32
              epochs: 5
        """)
    )
    assert (issue.path, issue.line) == ("update.epochs", 6)
    assert issue.message == "duplicate key (first set on line 4)."


def test_a_list_document_is_not_a_spec(single_issue):
    issue = single_issue("- name: run\n- env: CartPole-v1\n")
    assert (issue.path, issue.line, issue.message) == ("", 1, "the document is not a mapping.")


def test_a_scalar_document_is_not_a_spec(single_issue):
    issue = single_issue("\n\ncartpole\n")
    assert (issue.line, issue.message) == (3, "the document is not a mapping.")


@pytest.mark.parametrize(
    "text", ["", "\n\n", "# only a comment\n"], ids=["empty", "blank", "comment"]
)
def test_an_empty_file_is_not_a_spec(single_issue, text):
    issue = single_issue(text)
    assert issue.message == "expected one YAML mapping, found an empty document."


def test_two_documents_point_at_the_second(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "---\nname: other\n")
    assert (issue.line, issue.message) == (4, "expected one YAML mapping, found 2 documents.")


def test_yaml_syntax_error_gives_line_and_column(single_issue):
    issue = single_issue("name: run\nenv: CartPole-v1\nupdate: {epochs: 4\nrollout: {}\n")
    assert issue.message.startswith("YAML syntax error:")
    assert (issue.line, issue.column) == (4, 8)


def test_bad_indentation_is_a_syntax_error_at_its_line(single_issue):
    issue = single_issue("name: run\nenv: CartPole-v1\nupdate:\n  epochs: 4\n minibatch_size: 8\n")
    assert issue.message.startswith("YAML syntax error:")
    assert issue.line == 5


def test_merge_keys_are_rejected(single_issue):
    text = "base: &b {epochs: 4}\nname: run\nenv: CartPole-v1\nupdate:\n  <<: *b\n"
    issue = single_issue(text)
    assert (issue.path, issue.line) == ("update", 5)
    assert "merge keys" in issue.message


def test_a_boolean_mapping_key_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "on: 1\n")
    assert (issue.line, issue.message) == (3, "mapping key True is not a string.")


# --- file-level limits ------------------------------------------------------------------------


def test_non_utf8_bytes_are_located(write_spec):
    path = write_spec(b"name: run\nenv: CartPole-v1\ntracking:\n  tags: {cafe: caf\xe9}\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    [issue] = caught.value.issues
    assert (issue.line, issue.column) == (4, 19)
    assert issue.message == "byte 0xe9 is not valid UTF-8."


def test_a_file_over_one_mebibyte_is_rejected_before_parsing(write_spec, minimal_spec):
    path = write_spec(minimal_spec + "#" + "x" * MAX_SPEC_BYTES + "\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    [issue] = caught.value.issues
    assert "over 1048576 bytes (1 MiB)" in issue.message


def test_text_over_one_mebibyte_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "#" + "é" * (MAX_SPEC_BYTES // 2) + "\n")
    assert "1 MiB" in issue.message


def test_a_file_of_exactly_one_mebibyte_is_read(write_spec, minimal_spec):
    padding = MAX_SPEC_BYTES - len(minimal_spec) - 2
    path = write_spec(minimal_spec + "#" + "x" * padding + "\n")
    assert path.stat().st_size == MAX_SPEC_BYTES
    assert load_spec(path).name == "run"


def test_a_missing_file_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(SpecError) as caught:
        load_spec(missing)
    assert caught.value.source == str(missing)
    assert caught.value.issues[0].message == "cannot read the spec file: No such file or directory."


# --- hostile YAML -----------------------------------------------------------------------------

BILLION_LAUGHS = (
    "name: run\nenv: CartPole-v1\n"
    + 'a0: &a0 ["lol"]\n'
    + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
)


def test_alias_expansion_bomb_fails_fast_without_blowing_memory(single_issue):
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    issue = single_issue(BILLION_LAUGHS)
    elapsed = time.perf_counter() - started
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert "alias/anchor expansion bomb" in issue.message
    assert issue.path.startswith("a")
    assert issue.line in range(3, 13)  # inside an anchored list (a0 on line 3 ... a9 on line 12)
    # Generous bounds: expanding 10**9 values would take minutes and gigabytes.
    assert elapsed < 5
    assert grown_kib < 200 * 1024


def test_recursive_alias_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "tracking:\n  tags: &loop [*loop]\n")
    assert "nests more than" in issue.message
    assert issue.line == 4


def test_deeply_nested_document_is_rejected_not_a_recursion_error(single_issue, minimal_spec):
    depth = sys.getrecursionlimit() * 2
    issue = single_issue(minimal_spec + "x: " + "[" * depth + "]" * depth + "\n")
    assert "nests too deeply" in issue.message


def test_python_object_tag_raises_and_runs_nothing(single_issue, minimal_spec, tmp_path):
    marker = tmp_path / "pwned"
    text = minimal_spec + f'x: !!python/object/apply:os.system ["touch {marker}"]\n'
    issue = single_issue(text)
    assert (issue.path, issue.line) == ("x", 3)
    assert "tag:yaml.org,2002:python/object/apply:os.system" in issue.message
    assert not marker.exists()


def test_python_name_tag_on_a_known_field_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "update:\n  epochs: !!python/name:os.getcwd ''\n")
    assert (issue.path, issue.line) == ("update.epochs", 4)
    assert issue.message.startswith("YAML tag")


# --- values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "is_nan"), [(".nan", True), (".inf", False), ("-.inf", False)])
def test_non_finite_number_is_rejected(single_issue, minimal_spec, raw, is_nan):
    issue = single_issue(minimal_spec + f"advantage:\n  gamma: {raw}\n")
    assert (issue.path, issue.line) == ("advantage.gamma", 4)
    assert math.isnan(issue.value) if is_nan else math.isinf(issue.value)
    assert issue.message == "Input should be a finite number."


def test_non_finite_learning_rate_shorthand_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "update:\n  learning_rate: .inf\n")
    assert (issue.path, issue.line, issue.value) == ("update.learning_rate.start", 4, math.inf)


@pytest.mark.parametrize("budget", [0, -5])
def test_non_positive_budget_is_rejected(single_issue, minimal_spec, budget):
    issue = single_issue(minimal_spec + f"budget:\n  total_timesteps: {budget}\n")
    assert (issue.path, issue.line, issue.value) == ("budget.total_timesteps", 4, budget)
    assert "greater than or equal to 1" in issue.message


def test_minibatch_larger_than_rollout_shows_envs_times_steps(single_issue):
    issue = single_issue(
        yaml_text("""
            name: run
            env: {id: CartPole-v1, n_envs: 2}
            rollout: {n_steps: 8}
            update:
              minibatch_size: 64
        """)
    )
    assert (issue.path, issue.line, issue.value) == ("update.minibatch_size", 5, 64)
    assert "env.n_envs x rollout.n_steps = 2 x 8 = 16" in issue.message
    assert issue.fix == "use a minibatch_size of at most 16, ideally a divisor of it."


def test_minibatch_equal_to_rollout_is_accepted(load):
    spec = load(
        "name: run\nenv: {id: CartPole-v1, n_envs: 2}\nrollout: {n_steps: 8}\n"
        "update: {minibatch_size: 16}\n"
    )
    assert spec.batch_size == 16


@pytest.mark.parametrize("name", ["my run", "../etc", ".hidden", "a" * 101, "a/b", ""])
def test_unsafe_name_is_rejected(single_issue, name):
    issue = single_issue(f"env: CartPole-v1\nname: '{name}'\n")
    assert (issue.path, issue.line, issue.value) == ("name", 2, name)
    assert "Letters, digits" in issue.fix


def test_hundred_character_name_is_accepted(load):
    assert load(f"name: {'a' * 100}\nenv: CartPole-v1\n").name == "a" * 100


def test_unsafe_experiment_name_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec + "tracking:\n  experiment: ../shared\n")
    assert (issue.path, issue.line, issue.value) == ("tracking.experiment", 4, "../shared")


@pytest.mark.parametrize("env_id", ["gymnasium.envs.classic_control:CartPole-v1", "os:system"])
def test_env_id_with_a_module_prefix_is_rejected(single_issue, env_id):
    issue = single_issue(f"name: run\nenv:\n  id: '{env_id}'\n")
    assert (issue.path, issue.line, issue.value) == ("env.id", 3, env_id)


def test_namespaced_env_id_is_accepted(load):
    assert load("name: run\nenv: ppo_platform/GridWorld-v0\n").env.id == "ppo_platform/GridWorld-v0"


# --- number reading -------------------------------------------------------------------------


def test_exponent_without_a_dot_reads_as_a_float(load, minimal_spec):
    spec = load(minimal_spec + "update:\n  max_grad_norm: 5e-1\n")
    assert spec.update.max_grad_norm == 0.5


@pytest.mark.parametrize("text", [".e5", "+e5", "e5", "1e"])
def test_exponent_lookalikes_stay_strings(load, minimal_spec, text):
    spec = load(minimal_spec + f"tracking:\n  tags: {{note: {text}}}\n")
    assert spec.tracking.tags == {"note": text}


# --- overrides ------------------------------------------------------------------------------


def test_override_sets_an_int(load, minimal_spec):
    spec = load(minimal_spec + "update:\n  epochs: 10\n", ["update.epochs=4"])
    assert spec.update.epochs == 4
    assert type(spec.update.epochs) is int


def test_override_reaches_into_the_number_shorthand(load, minimal_spec):
    spec = load(
        minimal_spec + "update:\n  learning_rate: 1e-3\n", ["update.learning_rate.start=5e-4"]
    )
    assert (spec.update.learning_rate.start, spec.update.learning_rate.schedule) == (
        5e-4,
        "constant",
    )


def test_override_reaches_into_the_env_shorthand(load, minimal_spec):
    spec = load(minimal_spec, ["env.n_envs=4"])
    assert (spec.env.id, spec.env.n_envs) == ("CartPole-v1", 4)


def test_override_creates_a_missing_section(load, minimal_spec):
    spec = load(minimal_spec, ["policy.net_arch=[32, 32]", "advantage.gamma=0.9"])
    assert (spec.policy.net_arch, spec.advantage.gamma) == ([32, 32], 0.9)


def test_override_without_equals_sign_is_an_error(single_issue, minimal_spec):
    issue = single_issue(minimal_spec, ["update.epochs"])
    assert issue.path == "update.epochs"
    assert issue.message == "override 'update.epochs' is not dotted.path=value."


def test_override_of_an_unknown_key_names_the_key(single_issue, minimal_spec):
    issue = single_issue(minimal_spec, ["update.epoch=4"])
    assert (issue.path, issue.message, issue.line) == ("update.epoch", "unknown key.", None)
    assert "did you mean 'epochs'?" in issue.fix


def test_override_value_of_the_wrong_type_is_validated(single_issue, minimal_spec):
    issue = single_issue(minimal_spec, ["update.epochs=four"])
    assert (issue.path, issue.value) == ("update.epochs", "four")


def test_override_with_an_object_tag_is_rejected(single_issue, minimal_spec):
    issue = single_issue(minimal_spec, ["update.epochs=!!python/object/apply:os.getcwd []"])
    assert issue.path == "update.epochs"
    assert "is not allowed" in issue.message


def test_override_leaves_the_source_data_untouched(load, minimal_spec):
    load(minimal_spec, ["update.epochs=4"])
    assert load(minimal_spec).update.epochs == 10


# --- round trip -----------------------------------------------------------------------------


def test_dump_spec_loads_back_to_an_equal_spec(load, minimal_spec):
    spec = load(
        minimal_spec + "update: {learning_rate: {start: 1.0e-3, schedule: linear}}\n"
        "tracking: {tags: {team: rl}}\n"
    )
    again = load_spec_text(dump_spec(spec))
    assert again == spec
    assert again.spec_hash() == spec.spec_hash()


def test_dump_spec_round_trips_strings_that_look_like_exponents(load, minimal_spec):
    spec = load(minimal_spec + "tracking: {tags: {commit: '1e3', other: '5E-4'}}\n")
    assert load_spec_text(dump_spec(spec)) == spec


def test_shipped_spec_round_trips(repo_root):
    spec = load_spec(repo_root / "specs" / "cartpole.yaml")
    assert load_spec_text(dump_spec(spec)) == spec


@pytest.mark.parametrize("written, read", [("on", "on"), ("off", "off"), ("auto", "auto")])
def test_compiled_reads_unquoted_yaml_on_and_off_as_the_words(written: str, read: str) -> None:
    # YAML 1.1 reads a bare on/off as a boolean; the field means the word.
    text = f"name: words\nenv: CartPole-v1\ncompiled: {written}\n"
    assert load_spec_text(text, "words.yaml").compiled == read


def test_compiled_refuses_a_number_naming_the_field_and_the_choices() -> None:
    with pytest.raises(SpecError, match=r"compiled = 1: Input should be 'off', 'auto' or 'on'"):
        load_spec_text("name: words\nenv: CartPole-v1\ncompiled: 1\n", "words.yaml")
