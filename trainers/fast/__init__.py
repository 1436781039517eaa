"""The fast paths: faster equivalents of stock stable-baselines3 and torch pieces, equal to
them bit for bit (tests/trainers_tests/fast), behind one switch.

`PPO_PLATFORM_FAST_PATHS=0` runs stock SB3 and torch end to end; so does a torch or SB3 version
outside the pair the equality tests cover, or a private name they need gone (said once, as a
warning of the `ppo_platform.trainers.fast` logger). `fast_paths()` says whether they are on and
why not.

Each module replaces one stock piece:

- `algorithm`: the strategy object a trainer holds: policy class, optimizer, inference mode.
- `policy`: SB3's `ActorCriticPolicy` classes (a subclass that saves as the stock class).
- `manual`, `manual_heads`: autograd's backward in the PPO update, and the policy's forward
  in rollouts, for SB3's default MLP policy.
- `distributions`: `ActorCriticPolicy.evaluate_actions` (inlined distributions), and
  torch.distributions' argument checks.
- `optimizer_step`: `clip_grad_norm_` + `Adam.step()`.
- `compiler_free`: torch's "never compile" wrappers on the trainer's optimizer.
- `rollout_buffer`: `RolloutBuffer.get`.
- `dummy_vec_env`, `vec_normalize`: SB3's `DummyVecEnv` and `VecNormalize`.
- `switch`, `privates`: the switch, the version gate and the private names, looked up lazily.

Nothing here patches anything at import, and nothing imports a private name at module level.
"""

from .switch import ENV_VAR, FastPaths, fast_paths

__all__ = ["ENV_VAR", "FastPaths", "fast_paths"]
