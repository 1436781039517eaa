"""The compiled path's orthogonal initialisation: the matrices of `jax.nn.initializers.orthogonal`
(SB3's gains), computed without LAPACK's QR, whose jaxlib CPU kernel split a batch of seeds over
XLA's thread pool from inside it and deadlocked a two-thread pool."""

from __future__ import annotations

import math

import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from ppo_platform.trainers.compiled.network import init_params, orthogonal  # noqa: E402
from ppo_platform.trainers.compiled.ppo import CompiledConfig, CompiledPPO  # noqa: E402


@pytest.mark.parametrize("shape", [(4, 64), (64, 64), (64, 2), (64, 1), (6, 64)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_orthogonal_equals_jax_initializer(shape: tuple[int, int], seed: int) -> None:
    key = jax.random.PRNGKey(seed)
    ours = np.asarray(orthogonal(key, *shape, math.sqrt(2)))
    theirs = np.asarray(jax.nn.initializers.orthogonal(math.sqrt(2))(key, shape, jnp.float32))
    np.testing.assert_allclose(ours, theirs, atol=2e-5)
    small = min(shape)
    gram = ours.T @ ours if shape[0] >= shape[1] else ours @ ours.T
    np.testing.assert_allclose(gram, 2.0 * np.eye(small), atol=1e-5)


def test_the_batched_init_program_calls_no_lapack_qr() -> None:
    def init(key: object) -> object:
        return init_params(key, 4, 2, [64, 64], [64, 64])

    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(4)])
    hlo = jax.jit(jax.vmap(init)).lower(keys).as_text()
    assert "geqrf" not in hlo and "lapack" not in hlo.lower()
    reference = jax.jit(jax.vmap(lambda k: jax.nn.initializers.orthogonal()(k, (64, 64))))
    assert "geqrf" in reference.lower(keys).as_text()  # what the check looks for is real


def test_a_batch_of_seeds_initialises_as_each_seed_alone() -> None:
    config = CompiledConfig("CartPole-v1", 2, 8, 1, 16, 16, (1e-3, 0.0, True), (0.2, 0.0, True))
    program = CompiledPPO(config)
    batched = program._init(jnp.stack([jax.random.PRNGKey(s) for s in (3, 5)]))
    alone = program._init(jnp.stack([jax.random.PRNGKey(5)]))
    pairs = zip(
        jax.tree_util.tree_leaves(batched["params"]),
        jax.tree_util.tree_leaves(alone["params"]),
        strict=True,
    )
    for ours, theirs in pairs:
        np.testing.assert_allclose(np.asarray(ours)[1], np.asarray(theirs)[0], atol=1e-6)
