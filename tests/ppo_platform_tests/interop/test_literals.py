"""The safe literal reader: literals and nn.<Activation> names in, nothing evaluated."""

from __future__ import annotations

import pytest

from ppo_platform.interop.literals import Activation, LiteralError, parse_literal


def test_reads_the_zoo_policy_kwargs_shape():
    text = """dict(log_std_init=-2,
                   ortho_init=False,
                   activation_fn=nn.ReLU,
                   net_arch=dict(pi=[256, 256], vf=[256, 256])
                   )"""
    assert parse_literal(text) == {
        "log_std_init": -2,
        "ortho_init": False,
        "activation_fn": Activation("relu", "nn.ReLU"),
        "net_arch": {"pi": [256, 256], "vf": [256, 256]},
    }


def test_reads_a_dict_display_with_string_keys():
    assert parse_literal("{'norm_obs': True, 'norm_reward': False}") == {
        "norm_obs": True,
        "norm_reward": False,
    }


@pytest.mark.parametrize(
    ("text", "name"),
    [("nn.Tanh", "tanh"), ("th.nn.ELU", "elu"), ("torch.nn.LeakyReLU", "leaky_relu")],
)
def test_maps_torch_activation_names_to_ours(text, name):
    assert parse_literal(text) == Activation(name, text)


def test_reads_numbers_signs_tuples_and_none():
    assert parse_literal("[1e-3, -0.5, +2, (64, 64), None, 'x']") == [
        1e-3,
        -0.5,
        2,
        [64, 64],
        None,
        "x",
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("__import__('os').system('true')", "calls __import__('os').system(...)"),
        ("dict(a=open('/etc/passwd'))", "calls open(...)"),
        ("nn.GELU", "names the activation nn.GELU"),
        ("os.path", "names os.path"),
        ("x", "names 'x'"),
        ("1 + 2", "BinOp"),
        ("dict(**other)", "unpacks a mapping"),
        ("{**other}", "unpacks a mapping"),
        ("dict([('a', 1)])", "positional arguments"),
        ("{1: 2}", "keys must be strings"),
        ("dict(a=1, a=2)", "twice"),
        ("dict(a=1", "not a Python expression"),
        ("[lambda: 0]", "Lambda"),
        ("-'a'", "not a number"),
        ("[" * 50 + "]" * 50, "nests more than"),
        ("b'raw'", "bytes"),
    ],
)
def test_refuses_anything_but_a_literal(text, said):
    with pytest.raises(LiteralError, match=None) as caught:
        parse_literal(text)
    assert said in str(caught.value)


def test_refuses_very_long_text():
    with pytest.raises(LiteralError, match="longer than"):
        parse_literal("[" + "1," * 6000 + "]")
