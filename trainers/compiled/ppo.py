"""PPO as one compiled JAX program: SB3's PPO semantics (the rollout with same-step auto-reset
and truncation bootstrapping, GAE, K epochs of shuffled minibatches, per-minibatch advantage
normalisation, the clipped surrogate, optional value clipping, entropy bonus, global-norm
gradient clipping, torch's Adam, SB3's linear schedules of learning rate and clip range) and
the platform's per-update diagnostics (approx KL, clip fraction, explained variance, the KL
after the update), run `chunk` updates at a time so the caller's monitor reads every update.

`CompiledPPO(config).train(seeds, on_chunk)` trains every seed together (`jax.vmap`): each seed
has its own key, weights, optimiser and envs, so a seed trains as it would alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ppo_platform.trainers.compiled import losses as L
from ppo_platform.trainers.compiled.envs import JAX_ENVS, JaxEnv, auto_reset_step
from ppo_platform.trainers.compiled.exported import ExportStore
from ppo_platform.trainers.compiled.network import (
    adam_init,
    adam_step,
    clip_by_global_norm,
    init_params,
    logits_and_value,
)
from ppo_platform.trainers.compiled.seed_groups import group_sizes, joined, keys_of, split

# start, end, linear?  SB3's LinearSchedule(start, end, end_fraction=1) or a constant.
Schedule = tuple[float, float, bool]
# The quantiles of the last epoch's ratios, as trainers/losses.ratio_quantiles names them.
QUANTILE_NAMES = ("min", "p01", "p50", "p99", "max")
QUANTILE_LEVELS = (0.0, 0.01, 0.5, 0.99, 1.0)


def epoch_kl_name(epoch: int) -> str:
    """The torch trainer's name of epoch `epoch`'s mean approx KL (trainers/ppo.py)."""
    return f"train/approx_kl_epoch_{epoch:02d}"


def metric_names(config: CompiledConfig) -> tuple[str, ...]:
    """Every per-update metric the program returns, in a fixed order."""
    return (
        "train/policy_gradient_loss",
        "train/value_loss",
        "train/entropy_loss",
        "train/approx_kl",
        *(epoch_kl_name(i + 1) for i in range(config.epochs)),
        *(f"train/ratio_{name}" for name in QUANTILE_NAMES),
        "train/approx_kl_post",
        "train/clip_fraction",
        "train/explained_variance",
        "train/returns_std",
        "train/returns_rms",
        "train/loss",
        "train/grad_norm",
        "train/learning_rate",
        "train/clip_range",
        "rollout/episodes",
        "rollout/return_sum",
        "rollout/length_sum",
    )


@dataclass(frozen=True)
class CompiledConfig:
    """The PPO hyperparameters the compiled program takes (static: one compilation each)."""

    env_id: str
    n_envs: int
    n_steps: int
    epochs: int
    minibatch_size: int
    total_timesteps: int
    learning_rate: Schedule
    clip_range: Schedule
    clip_range_vf: float | None = None
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    normalize_advantage: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    pi_arch: tuple[int, ...] = (64, 64)
    vf_arch: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    ortho_init: bool = True
    chunk: int = field(default=64)

    @property
    def batch_size(self) -> int:
        return self.n_envs * self.n_steps

    @property
    def n_updates(self) -> int:
        """SB3's learn loop: rollouts until num_timesteps >= total_timesteps."""
        return math.ceil(self.total_timesteps / self.batch_size)

    @property
    def env(self) -> JaxEnv:
        return JAX_ENVS[self.env_id]


def schedule_value(schedule: Schedule, progress_remaining: Any) -> Any:
    """SB3's schedules at `progress_remaining` (1 at the start, <= 0 at the end)."""
    start, end, linear = schedule
    if not linear:
        return jnp.float32(start)
    done = jnp.minimum(1.0 - progress_remaining, 1.0)
    return start + done * (end - start)


def _carry(config: CompiledConfig, key: Any) -> dict[str, Any]:
    env = config.env
    k_params, k_envs, k_next = jax.random.split(key, 3)
    params = init_params(
        k_params,
        env.observation_size,
        env.n_actions,
        config.pi_arch,
        config.vf_arch,
        config.ortho_init,
    )
    physics = jax.vmap(env.reset_physics)(jax.random.split(k_envs, config.n_envs))
    return {
        "params": params,
        "opt": adam_init(params),
        "physics": physics,
        "elapsed": jnp.zeros((config.n_envs,), jnp.int32),
        "episode_return": jnp.zeros((config.n_envs,), jnp.float32),
        "episode_length": jnp.zeros((config.n_envs,), jnp.int32),
        "key": k_next,
        "update": jnp.zeros((), jnp.int32),
    }


def _rollout(config: CompiledConfig, carry: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    env, act = config.env, config.activation
    params = carry["params"]
    step_env = jax.vmap(lambda p, e, a, k: auto_reset_step(env, p, e, a, k))

    def step(state: dict[str, Any], _: Any) -> tuple[dict[str, Any], Any]:
        key, k_action, k_reset = jax.random.split(state["key"], 3)
        observation = jax.vmap(env.observe)(state["physics"])
        logits, value = logits_and_value(params, observation, act)
        action = jax.random.categorical(k_action, logits)
        log_prob, _ = L.categorical(logits, action)
        physics, elapsed, reward, terminated, truncated, final = step_env(
            state["physics"], state["elapsed"], action, jax.random.split(k_reset, config.n_envs)
        )
        _, final_value = logits_and_value(params, final, act)
        done = terminated | truncated
        episode_return = state["episode_return"] + reward
        episode_length = state["episode_length"] + 1
        finished = (
            done.sum(),
            jnp.where(done, episode_return, 0.0).sum(),
            jnp.where(done, episode_length, 0).sum(),
        )
        # SB3: a truncated episode's last reward bootstraps from the value of where it ended.
        stored_reward = reward + config.gamma * final_value * truncated
        new_state = {
            **state,
            "key": key,
            "physics": physics,
            "elapsed": elapsed,
            "episode_return": jnp.where(done, 0.0, episode_return),
            "episode_length": jnp.where(done, 0, episode_length),
        }
        return new_state, (observation, action, log_prob, value, stored_reward, done, finished)

    carry, batch = jax.lax.scan(step, carry, None, length=config.n_steps)
    return carry, batch


def _loss(config: CompiledConfig, params: Any, mb: Any, clip: Any) -> tuple[Any, Any]:
    """One minibatch's loss as the torch trainer's `_minibatch` computes it, and its stats."""
    m_obs, m_actions, m_old_log_prob, m_values, m_adv, m_returns = mb
    logits, new_values = logits_and_value(params, m_obs, config.activation)
    log_prob, entropy = L.categorical(logits, m_actions)
    if config.normalize_advantage and config.minibatch_size > 1:
        m_adv = L.normalized(m_adv)
    policy_loss = L.clipped_surrogate(log_prob, m_old_log_prob, m_adv, clip)
    value_loss = L.value_loss(new_values, m_values, m_returns, config.clip_range_vf)
    entropy_loss = -jnp.mean(entropy)
    loss = policy_loss + config.ent_coef * entropy_loss + config.vf_coef * value_loss
    kl = L.approx_kl(log_prob, m_old_log_prob)
    fraction = L.clip_fraction(log_prob, m_old_log_prob, clip)
    ratio = jnp.exp(log_prob - m_old_log_prob)
    return loss, (policy_loss, value_loss, entropy_loss, kl, fraction, loss, ratio)


def optimise(
    config: CompiledConfig, params: Any, opt: Any, flat: Any, lr: Any, clip: Any, key: Any
) -> tuple[Any, Any, Any]:
    """K epochs of shuffled minibatch steps over one rollout `flat` = (observations, actions,
    old log-probs, old values, advantages, returns), each (batch, ...): SB3's PPO.train without
    early stopping. Returns the new params, Adam state and per-minibatch stats (K, M, ...)."""
    grad_fn = jax.grad(lambda p, mb: _loss(config, p, mb, clip), has_aux=True)
    n_minibatches = config.batch_size // config.minibatch_size

    def minibatch(state: Any, indices: Any) -> tuple[Any, Any]:
        params, opt = state
        grads, stats = grad_fn(params, jax.tree_util.tree_map(lambda x: x[indices], flat))
        grads, norm = clip_by_global_norm(grads, config.max_grad_norm)
        params, opt = adam_step(params, grads, opt, lr)
        return (params, opt), (*stats, norm)

    def epoch(state: Any, key: Any) -> tuple[Any, Any]:
        order = jax.random.permutation(key, config.batch_size)
        return jax.lax.scan(minibatch, state, order.reshape(n_minibatches, -1))

    (params, opt), stats = jax.lax.scan(epoch, (params, opt), jax.random.split(key, config.epochs))
    return params, opt, stats


def _update(config: CompiledConfig, carry: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    act = config.activation
    progress = 1.0 - (carry["update"] + 1).astype(jnp.float32) * (
        config.batch_size / config.total_timesteps
    )
    lr = schedule_value(config.learning_rate, progress)
    clip = jnp.maximum(schedule_value(config.clip_range, progress), 1e-8)
    carry, (obs, actions, old_log_prob, values, rewards, dones, finished) = _rollout(config, carry)
    last_obs = jax.vmap(config.env.observe)(carry["physics"])
    _, last_values = logits_and_value(carry["params"], last_obs, act)
    advantages, returns = L.gae(
        rewards, values, dones, last_values, config.gamma, config.gae_lambda
    )
    flat = jax.tree_util.tree_map(
        lambda x: x.reshape((config.batch_size, *x.shape[2:])),
        (obs, actions, old_log_prob, values, advantages, returns),
    )
    key, k_epochs = jax.random.split(carry["key"])
    params, opt, stats = optimise(config, carry["params"], carry["opt"], flat, lr, clip, k_epochs)
    post_logits, _ = logits_and_value(params, flat[0], act)
    post_log_prob, _ = L.categorical(post_logits, flat[1])
    metrics = update_metrics(config, stats, flat, finished)
    metrics["train/approx_kl_post"] = L.approx_kl(post_log_prob, flat[2])
    metrics["train/learning_rate"] = jnp.asarray(lr, jnp.float32)
    metrics["train/clip_range"] = clip
    carry = {**carry, "params": params, "opt": opt, "key": key, "update": carry["update"] + 1}
    return carry, metrics


def update_metrics(config: CompiledConfig, stats: Any, flat: Any, finished: Any) -> dict[str, Any]:
    """The torch trainer's per-update metrics from the minibatch stats (K, M) of `optimise`."""
    policy_loss, value_loss, entropy_loss, kl, fraction, loss, ratio, norm = stats
    episodes, return_sum, length_sum = (x.sum() for x in finished)
    returns = flat[5]
    quantiles = jnp.quantile(ratio[-1].reshape(-1), jnp.asarray(QUANTILE_LEVELS))
    return {
        "train/policy_gradient_loss": policy_loss.mean(),
        "train/value_loss": value_loss.mean(),
        "train/entropy_loss": entropy_loss.mean(),
        "train/approx_kl": kl[-1].mean(),  # SB3's: the last epoch's, where the update ended
        **{epoch_kl_name(i + 1): kl[i].mean() for i in range(config.epochs)},
        **{f"train/ratio_{n}": q for n, q in zip(QUANTILE_NAMES, quantiles, strict=True)},
        "train/clip_fraction": fraction.mean(),
        "train/explained_variance": L.explained_variance(flat[3], returns),
        "train/returns_std": jnp.std(returns),
        "train/returns_rms": jnp.sqrt(jnp.mean(returns**2)),
        "train/loss": loss[-1, -1],
        "train/grad_norm": norm.mean(),
        "rollout/episodes": episodes.astype(jnp.float32),
        "rollout/return_sum": return_sum.astype(jnp.float32),
        "rollout/length_sum": length_sum.astype(jnp.float32),
    }


def _chunk_program(config: CompiledConfig) -> Callable[[Any, Any], Any]:
    names = metric_names(config)

    def run(carry: dict[str, Any], count: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        buffer = {name: jnp.zeros((config.chunk,), jnp.float32) for name in names}

        def body(i: Any, state: Any) -> Any:
            carry, buffer = state
            carry, metrics = _update(config, carry)
            buffer = {n: buffer[n].at[i].set(metrics[n].astype(jnp.float32)) for n in names}
            return carry, buffer

        return jax.lax.fori_loop(0, count, body, (carry, buffer))

    return run


# on_chunk(first update, metrics (seeds, updates), state {"params", "opt"} batched over seeds)
ChunkCallback = Callable[[int, dict[str, np.ndarray], dict[str, Any]], bool | None]


@dataclass
class CompiledRun:
    """What a batch of seeds trained: each seed's weights and its per-update metrics."""

    seeds: list[int]
    params: Any  # the pytree, batched over seeds on axis 0
    metrics: dict[str, np.ndarray]  # (seeds, updates) each
    updates: int
    timesteps: int

    def seed_params(self, index: int) -> Any:
        return jax.tree_util.tree_map(lambda x: np.asarray(x[index]), self.params)


class CompiledPPO:
    """Compiles the config's program once (per config) and trains batches of seeds; with a
    `store`, from the traced programs kept there (exported.py)."""

    def __init__(self, config: CompiledConfig, store: ExportStore | None = None) -> None:
        if config.env_id not in JAX_ENVS:
            raise ValueError(f"no JAX port of {config.env_id!r}; ports: {sorted(JAX_ENVS)}")
        if config.batch_size % config.minibatch_size:
            raise ValueError(
                f"minibatch_size {config.minibatch_size} must divide the rollout "
                f"({config.n_envs} x {config.n_steps} = {config.batch_size})"
            )
        self.config, self.store = config, store
        self._init = jax.jit(jax.vmap(lambda key: _carry(config, key)))
        self._chunk = jax.jit(jax.vmap(_chunk_program(config), in_axes=(0, None)))
        self._prepared: dict[int, tuple[Any, Any]] = {}  # seeds -> (init, chunk) compiled

    def prepare(self, n_seeds: int, threads: int = 1) -> None:
        """Trace and compile (or load from XLA's cache) the programs for a batch of `n_seeds`
        on `threads` threads now, from their shapes alone; `train` then runs them as they are."""
        for size in set(group_sizes(n_seeds, threads)):
            if size not in self._prepared:
                self._prepared[size] = self._compile(size)

    def _compile(self, n_seeds: int) -> tuple[Any, Any]:
        keys = jax.ShapeDtypeStruct((n_seeds, 2), jnp.uint32)  # jax.random.PRNGKey's
        count = jax.ShapeDtypeStruct((), jnp.int32)
        if self.store is None:
            init = self._init.lower(keys).compile()
            return init, self._chunk.lower(jax.eval_shape(self._init, keys), count).compile()
        key = repr(self.config)
        init = self.store.compiled("init", self._init, key, keys)
        carry = jax.tree_util.tree_map(
            lambda out: jax.ShapeDtypeStruct(out.shape, out.dtype), init.out_info
        )
        return init, self.store.compiled("chunk", self._chunk, key, carry, count)

    def train(
        self,
        seeds: Sequence[int],
        on_chunk: ChunkCallback | None = None,
        next_chunk: Callable[[int], int] | None = None,
        threads: int = 1,
    ) -> CompiledRun:
        """Train every seed together. `on_chunk(first_update, metrics, state)` sees each
        chunk's metrics, (seeds, updates_in_chunk) arrays, and the weights and Adam state at its
        end (batched over seeds), and stops the batch by returning True. `next_chunk(done)`
        caps the next chunk's updates (a caller's next evaluation, say); at most `chunk`.
        `threads` > 1 splits the seeds into that many groups, each run on its own thread (XLA
        runs without the GIL): each seed still trains as it would alone."""
        config = self.config
        self.prepare(len(seeds), threads)
        groups = split(list(seeds), group_sizes(len(seeds), threads))
        carries = [self._prepared[len(g)][0](keys_of(g)) for g in groups]
        names = metric_names(config)
        collected: dict[str, list[np.ndarray]] = {name: [] for name in names}
        done = 0
        with ThreadPoolExecutor(len(groups), thread_name_prefix="compiled") as pool:
            while done < config.n_updates:
                wanted = next_chunk(done) if next_chunk is not None else config.chunk
                count = max(1, min(config.chunk, wanted, config.n_updates - done))
                ran = list(pool.map(self._run_chunk, carries, [count] * len(carries)))
                carries = [carry for carry, _ in ran]
                chunk = {
                    name: np.concatenate([np.asarray(b[name])[:, :count] for _, b in ran])
                    for name in names
                }
                for name in names:
                    collected[name].append(chunk[name])
                state = {key: joined([c[key] for c in carries]) for key in ("params", "opt")}
                stop = on_chunk(done, chunk, state) if on_chunk is not None else None
                done += count
                if stop:
                    break
        params = joined([c["params"] for c in carries])
        metrics = {name: np.concatenate(parts, axis=1) for name, parts in collected.items()}
        return CompiledRun(list(seeds), params, metrics, done, done * config.batch_size)

    def _run_chunk(self, carry: Any, count: int) -> tuple[Any, Any]:
        run = self._prepared[len(carry["update"])][1]
        carry, buffer = run(carry, jnp.int32(count))
        return carry, jax.block_until_ready(buffer)
