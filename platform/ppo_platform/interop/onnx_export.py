"""`ppo-platform export RUN_ID --onnx OUT.onnx`: a run's policy as an ONNX graph, checked.

The graph maps a batch of raw observations (input `observation`, float32, shape [batch, *the
model's observation shape]; images channel-first, as SB3 feeds them to the network) to the
deterministic action (output `action`: int64 indices for a Discrete action space, float32
clipped to the bounds for a Box), exactly what `model.predict(..., deterministic=True)` gives.
When the run normalized observations, the normalization is folded into the graph (in float64,
as VecNormalize computes it), so the graph takes the env's observations as they come. Box
observations (images included: the graph scales them as SB3 does), Discrete and MultiDiscrete
ones (input int64 indices, one-hot encoded in the graph as SB3 preprocesses them) and Dict
observations of those (one graph input per key, named after it); other spaces are refused.

Before it is kept, onnxruntime runs the graph on observations of the run's own env and its
actions must equal the torch policy's (exactly for Discrete actions, to float32 rounding for
Box ones); else nothing is written.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.preprocessing import maybe_transpose
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from ppo_platform.errors import BadInputError, SpecIssue
from ppo_platform.training.play import TrainedRun, load_policy

# Protobuf refuses a message over 2 GiB: only a graph whose weights pass this keeps them in a
# visible `<name>.onnx.data` beside it (docs/guides/your-trained-agent.md).
EXTERNAL_DATA_BYTES = 2**31 - 2**26
CHECK_STEPS = 256  # observations of the run's env the export is checked on
BOX_TOLERANCE = 1e-5
EXPORT_FIX = "install the export extra: pip install 'ppo-platform[export]'."


@dataclass(frozen=True)
class GraphInput:
    """One input of the graph: its name, dtype and the shape of one observation."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    def describe(self) -> str:
        return f"`{self.name}` ({self.dtype} [{', '.join(['batch', *map(str, self.shape)])}])"


@dataclass(frozen=True)
class ExportResult:
    path: Path
    inputs: tuple[GraphInput, ...]  # one observation, as the graph takes it
    checked: int  # observations whose actions onnxruntime and torch agreed on
    max_difference: float  # largest |onnx - torch| action difference (0 for Discrete)
    normalized: bool  # the run's observation normalization is folded in
    external_data: Path | None = None  # the weights' file beside `path` (only past 2 GiB)


INDEX_SPACES = (spaces.Discrete, spaces.MultiDiscrete)  # fed as int64 indices, one-hot in SB3


def input_names(space: spaces.Space) -> list[str]:
    """The graph's inputs: `observation`, or one per key of a Dict space."""
    return list(space.spaces) if isinstance(space, spaces.Dict) else ["observation"]


class DeterministicPolicy(torch.nn.Module):
    """Raw observation(s) -> deterministic action, as `predict` computes it."""

    policy: Any  # SB3's ActorCriticPolicy
    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, model: BaseAlgorithm, stats: VecNormalize | None) -> None:
        super().__init__()
        self.policy = model.policy
        self.discrete = isinstance(model.action_space, spaces.Discrete)
        self.keys = input_names(model.observation_space)
        self.dict = isinstance(model.observation_space, spaces.Dict)
        self.normalized: list[str] = []  # the inputs whose normalization is folded in
        self.clip = float(stats.clip_obs) if stats is not None else 0.0
        if stats is not None and stats.norm_obs:
            rms: Any = stats.obs_rms  # a RunningMeanStd, or one per normalized key of a Dict
            for key in self.keys:
                one = rms.get(key) if isinstance(rms, dict) else rms
                if one is None:
                    continue
                self.normalized.append(key)
                scale = np.sqrt(one.var + stats.epsilon)
                self.register_buffer(f"mean_{key}", torch.as_tensor(one.mean, dtype=torch.float64))
                self.register_buffer(f"scale_{key}", torch.as_tensor(scale, dtype=torch.float64))
        if isinstance(model.action_space, spaces.Box):
            low, high = model.action_space.low, model.action_space.high
            self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

    def _normalize(self, key: str, observation: torch.Tensor) -> torch.Tensor:
        if key not in self.normalized:
            return observation
        mean, scale = getattr(self, f"mean_{key}"), getattr(self, f"scale_{key}")
        normalized = (observation.to(torch.float64) - mean) / scale  # in float64, like numpy
        return torch.clamp(normalized, -self.clip, self.clip).to(torch.float32)

    def forward(self, *observations: torch.Tensor) -> torch.Tensor:
        inputs = [self._normalize(k, o) for k, o in zip(self.keys, observations, strict=True)]
        observation: Any = dict(zip(self.keys, inputs, strict=True)) if self.dict else inputs[0]
        features = self.policy.extract_features(observation, self.policy.pi_features_extractor)
        latent = self.policy.mlp_extractor.forward_actor(features)
        out = self.policy.action_net(latent)
        if self.discrete:
            return torch.argmax(out, dim=1)
        if getattr(self.policy, "squash_output", False):  # gSDE's tanh: already in [-1, 1]
            out = torch.tanh(out)
            return self.low + 0.5 * (out + 1.0) * (self.high - self.low)
        return torch.maximum(torch.minimum(out, self.high), self.low)


def _refuse(path: str, message: str, value: Any, fix: str) -> BadInputError:
    return BadInputError([SpecIssue(path, message, value, fix=fix)])


def check_exportable(model: BaseAlgorithm) -> None:
    observation, action = model.observation_space, model.action_space
    parts = observation.spaces.values() if isinstance(observation, spaces.Dict) else [observation]
    odd = [type(p).__name__ for p in parts if not isinstance(p, (spaces.Box, *INDEX_SPACES))]
    if odd:
        raise _refuse(
            "observation_space",
            "only Box, Discrete and MultiDiscrete observations (or a Dict of them) export to "
            "ONNX here.",
            ", ".join(odd),
            "load model.zip in stable-baselines3 instead (docs/guides/your-trained-agent.md), "
            "or flatten the observation in the env (env.wrappers: flatten_observation).",
        )
    if not isinstance(action, (spaces.Discrete, spaces.Box)):
        raise _refuse(
            "action_space",
            "only Discrete and Box actions export to ONNX here.",
            type(action).__name__,
            "load model.zip in stable-baselines3 instead.",
        )


def _onnx_modules() -> Any:
    try:
        for name in ("onnx", "onnxscript"):
            importlib.import_module(name)
        return importlib.import_module("onnxruntime")
    except ImportError as error:
        raise _refuse("--onnx", f"{error.name} is not installed.", None, EXPORT_FIX) from error


Observations = dict[str, np.ndarray]  # one batch per graph input


def _as_inputs(model: BaseAlgorithm, batch: Any) -> Observations:
    """A batch of raw observations as the graph's inputs: int64 indices or float32 values."""
    space = model.observation_space
    if isinstance(space, spaces.Dict):
        return {k: _typed(batch[k], s) for k, s in space.spaces.items()}
    return {"observation": _typed(batch, space)}


def _typed(values: Any, space: spaces.Space) -> np.ndarray:
    return np.asarray(values, dtype=np.int64 if isinstance(space, INDEX_SPACES) else np.float32)


def env_observations(model: BaseAlgorithm, env: VecEnv, steps: int = CHECK_STEPS) -> Observations:
    """Raw observations the trained policy meets on its env (plus the env's own samples)."""
    seen: list[Any] = []
    observation = env.reset()
    for _ in range(steps):
        raw = env.get_original_obs() if isinstance(env, VecNormalize) else observation
        # Images as the model sees them: channel-first (SB3 transposes HxWxC frames).
        if isinstance(raw, dict):
            seen.append({k: v[0] for k, v in raw.items()})
        else:
            seen.append(maybe_transpose(np.asarray(raw)[0], model.observation_space))
        action, _ = model.predict(observation, deterministic=True)  # type: ignore[arg-type]
        observation, *_ = env.step(action)
    every = [*seen, *(model.observation_space.sample() for _ in range(steps // 4))]
    if isinstance(model.observation_space, spaces.Dict):
        return _as_inputs(model, {k: np.stack([o[k] for o in every]) for k in every[0]})
    return _as_inputs(model, np.stack(every))


def torch_actions(model: BaseAlgorithm, stats: VecNormalize | None, obs: Observations) -> Any:
    """The platform's own answer: `predict` on what VecNormalize makes of `obs`."""
    batch: Any = obs if isinstance(model.observation_space, spaces.Dict) else obs["observation"]
    normalized = stats.normalize_obs(batch) if stats is not None else batch
    actions, _ = model.predict(normalized, deterministic=True)  # type: ignore[arg-type]
    return actions


def export_onnx(run: TrainedRun, out: Path) -> ExportResult:
    """Write the run's policy to `out` once onnxruntime agrees with torch on its actions."""
    runtime = _onnx_modules()
    model, env = load_policy(run)
    try:
        check_exportable(model)
        stats = env if isinstance(env, VecNormalize) else None
        module = DeterministicPolicy(model, stats).eval()
        observations = env_observations(model, env)
    finally:
        env.close()
    partial = out.with_name(f".{out.name}.partial")
    large = weight_bytes(module) > EXTERNAL_DATA_BYTES
    try:
        _write_graph(module, observations, partial, large)
        difference = _check(runtime, partial, model, stats, observations, large)
        _publish(partial, out, large)
    finally:
        partial.unlink(missing_ok=True)
        _external_data(partial).unlink(missing_ok=True)
    inputs = tuple(
        GraphInput(k, str(v.dtype), tuple(int(n) for n in v.shape[1:]))
        for k, v in observations.items()
    )
    checked = len(next(iter(observations.values())))
    data = _external_data(out) if large else None
    return ExportResult(out, inputs, checked, difference, bool(module.normalized), data)


def weight_bytes(module: torch.nn.Module) -> int:
    """The bytes of the weights (and buffers) the graph will hold."""
    tensors = [*module.parameters(), *module.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def _external_data(path: Path) -> Path:
    """Where an ONNX file's weights lie when they are kept outside it."""
    return path.with_name(f"{path.name}.data")


def _write_graph(module: torch.nn.Module, obs: Observations, path: Path, large: bool) -> None:
    """The graph at `path`: one self-contained file unless its weights pass protobuf's limit."""
    names = list(obs)
    example = tuple(torch.as_tensor(obs[k][:2]) for k in names)
    batch = torch.export.Dim("batch", min=1)
    with torch.no_grad(), _exporter_quiet():
        torch.onnx.export(
            module,
            example,
            str(path),
            input_names=names,
            output_names=["action"],
            dynamic_shapes=(tuple({0: batch} for _ in names),),  # forward(*observations)
            dynamo=True,
            external_data=large,
            verbose=False,
        )


def _publish(partial: Path, out: Path, large: bool) -> None:
    """`partial` becomes `out`; large weights move to the visible `<out>.data` it names."""
    if not large:
        os.replace(partial, out)
        return
    import onnx

    graph = onnx.load(str(partial))  # reads the weights from the hidden partial's data file
    onnx.save_model(
        graph,
        str(out),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=_external_data(out).name,
    )


@contextlib.contextmanager
def _exporter_quiet() -> Iterator[None]:
    """The exporter's notes (no torchvision, deprecations) are not the user's business."""
    exporter = logging.getLogger("torch.onnx")
    level = exporter.level
    exporter.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        exporter.setLevel(level)


def _check(
    runtime: Any,
    path: Path,
    model: BaseAlgorithm,
    stats: VecNormalize | None,
    obs: Observations,
    large: bool,
) -> float:
    # From the file's bytes, without its folder: the graph that passes needs no file beside it.
    source = str(path) if large else path.read_bytes()
    session = runtime.InferenceSession(source, providers=["CPUExecutionProvider"])
    exported = session.run(["action"], obs)[0]
    expected = torch_actions(model, stats, obs)
    if isinstance(model.action_space, spaces.Discrete):
        agree = np.array_equal(exported.reshape(-1), np.asarray(expected).reshape(-1))
        difference = 0.0 if agree else float("inf")
    else:
        difference = float(np.max(np.abs(exported - expected)))
        agree = difference <= BOX_TOLERANCE
    if not agree:
        raise _refuse(
            "--onnx",
            f"the exported graph's actions differ from the torch policy's (max difference "
            f"{difference}); nothing was written.",
            str(path.name),
            "report it with the run's spec: this policy does not export faithfully.",
        )
    return difference
