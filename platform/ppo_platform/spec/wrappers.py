"""`env.wrappers`: the wrapper vocabulary as data, each entry a name and validated parameters.

Applied in the listed order to every env of training and evaluation alike (`apply.py`).
`frame_stack` stacks the vectorized observations (SB3's VecFrameStack, as the zoo does), so it
comes last. Env packages may register their own wrappers under dotted names (`registry.py`);
those are listed as `{name: my_pkg.wrapper, params: {...}}` and checked when the env is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

# Package wrapper names are dotted (`package.wrapper`), so they never shadow a built-in one
# (ppo_platform.envs.registry holds what env packages registered under such names).
PACKAGE_WRAPPER_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"

Scalar = str | int | float | bool | None


class _Wrapper(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class AtariWrapperSpec(_Wrapper):
    """SB3's AtariWrapper: no-op reset, frame skip (max-pooled), life loss as episode end, fire
    reset, 84x84 grayscale, reward clipping. Episode returns are recorded before it (the score)."""

    name: Literal["atari"] = Field(description="The wrapper: atari.")
    noop_max: int = Field(30, ge=0, le=1000, description="Random no-ops (at most) on reset.")
    frame_skip: int = Field(4, ge=1, le=16, description="Frames per action (max-pooled).")
    screen_size: int = Field(84, ge=8, le=512, description="Square frame size after resizing.")
    terminal_on_life_loss: bool = Field(True, description="A lost life ends the episode.")
    clip_reward: bool = Field(True, description="Rewards clipped to their sign (-1, 0, +1).")
    action_repeat_probability: float = Field(
        0.0, ge=0, le=1, description="Sticky actions: repeat the last action with this chance."
    )


class FrameStackSpec(_Wrapper):
    """The last `n` observations stacked along the channels (SB3's VecFrameStack); last."""

    name: Literal["frame_stack"] = Field(description="The wrapper: frame_stack.")
    n: int = Field(4, ge=1, le=32, description="Observations stacked.")


class GrayscaleSpec(_Wrapper):
    """RGB image observations to grayscale (gymnasium's GrayscaleObservation)."""

    name: Literal["grayscale"] = Field(description="The wrapper: grayscale.")
    keep_dim: bool = Field(True, description="Keep a channel axis (needed by CNN policies).")


class ResizeSpec(_Wrapper):
    """Image observations resized to height x width (gymnasium's ResizeObservation)."""

    name: Literal["resize"] = Field(description="The wrapper: resize.")
    height: int = Field(84, ge=1, le=1024, description="Rows after resizing.")
    width: int = Field(84, ge=1, le=1024, description="Columns after resizing.")


class TimeLimitSpec(_Wrapper):
    """Truncate episodes after `max_episode_steps` steps (gymnasium's TimeLimit)."""

    name: Literal["time_limit"] = Field(description="The wrapper: time_limit.")
    max_episode_steps: int = Field(ge=1, le=10_000_000, description="Steps per episode at most.")


class ClipActionSpec(_Wrapper):
    """Clip continuous actions to the action space's bounds (gymnasium's ClipAction)."""

    name: Literal["clip_action"] = Field(description="The wrapper: clip_action.")


class RescaleActionSpec(_Wrapper):
    """Continuous actions rescaled from [min_action, max_action] to the env's bounds."""

    name: Literal["rescale_action"] = Field(description="The wrapper: rescale_action.")
    min_action: float = Field(-1.0, ge=-1e6, le=1e6, description="Lower bound the policy sees.")
    max_action: float = Field(1.0, ge=-1e6, le=1e6, description="Upper bound the policy sees.")

    @model_validator(mode="after")
    def _ordered(self) -> RescaleActionSpec:
        if self.min_action >= self.max_action:
            raise ValueError(
                f"min_action ({self.min_action}) must be below max_action ({self.max_action})"
            )
        return self


class FlattenObservationSpec(_Wrapper):
    """Observations flattened to one vector (gymnasium's FlattenObservation)."""

    name: Literal["flatten_observation"] = Field(description="The wrapper: flatten_observation.")


class PackageWrapperSpec(_Wrapper):
    """A wrapper an env package registered (`ppo_platform.envs.register_wrapper`)."""

    name: str = Field(
        pattern=PACKAGE_WRAPPER_PATTERN,
        description="Dotted name the env package registered, e.g. my_envs.shaping.",
    )
    params: dict[str, Scalar | list[Scalar]] = Field(
        default_factory=dict, description="Keyword arguments of the wrapper (plain values)."
    )


BUILTIN_WRAPPERS: dict[str, type[_Wrapper]] = {
    "atari": AtariWrapperSpec,
    "frame_stack": FrameStackSpec,
    "grayscale": GrayscaleSpec,
    "resize": ResizeSpec,
    "time_limit": TimeLimitSpec,
    "clip_action": ClipActionSpec,
    "rescale_action": RescaleActionSpec,
    "flatten_observation": FlattenObservationSpec,
}
PACKAGE = "package"


def _kind(value: Any) -> str:
    name = value.get("name") if isinstance(value, dict) else getattr(value, "name", None)
    return name if isinstance(name, str) and name in BUILTIN_WRAPPERS else PACKAGE


WrapperSpec = Annotated[
    Annotated[AtariWrapperSpec, Tag("atari")]
    | Annotated[FrameStackSpec, Tag("frame_stack")]
    | Annotated[GrayscaleSpec, Tag("grayscale")]
    | Annotated[ResizeSpec, Tag("resize")]
    | Annotated[TimeLimitSpec, Tag("time_limit")]
    | Annotated[ClipActionSpec, Tag("clip_action")]
    | Annotated[RescaleActionSpec, Tag("rescale_action")]
    | Annotated[FlattenObservationSpec, Tag("flatten_observation")]
    | Annotated[PackageWrapperSpec, Tag(PACKAGE)],
    Discriminator(_kind),
]


def wrapper_shorthand(value: Any) -> Any:
    """`atari` -> {name: atari}: a wrapper without parameters may be written as its name."""
    return {"name": value} if isinstance(value, str) else value


def frame_stack_of(wrappers: Sequence[Any]) -> int:
    """Observations stacked by the list's frame_stack (1 without one)."""
    return next((w.n for w in wrappers if isinstance(w, FrameStackSpec)), 1)


def check_wrapper_order(wrappers: list[Any]) -> list[Any]:
    """frame_stack at most once and last (it stacks the vectorized env's observations)."""
    stacks = [i for i, w in enumerate(wrappers) if isinstance(w, FrameStackSpec)]
    if len(stacks) > 1 or (stacks and stacks[0] != len(wrappers) - 1):
        raise ValueError(
            "frame_stack stacks the vectorized observations (SB3's VecFrameStack): list it "
            "once, as the last wrapper"
        )
    if sum(isinstance(w, AtariWrapperSpec) for w in wrappers) > 1:
        raise ValueError("atari is listed twice; list it once")
    return wrappers
