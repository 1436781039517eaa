"""The return an env's registry declares solved (gymnasium's `reward_threshold`), read where the
env is registered: a run records it on its tags, so the doctor reads it later on a machine
that never imported the operator's env packages."""

from __future__ import annotations


def solved_return_of(env_id: str) -> float | None:
    """gymnasium's `reward_threshold` for `env_id` (the return its registry declares solved:
    475 for CartPole-v1), None where it declares none or the id is not registered here (the
    operator's env packages are imported first, as for any env check)."""
    import gymnasium

    from ppo_platform.envs.own import register_envs
    from ppo_platform.envs.packages import import_env_packages
    from ppo_platform.errors import BadInputError

    register_envs()
    try:
        import_env_packages()
        threshold = gymnasium.spec(env_id).reward_threshold
    except (BadInputError, gymnasium.error.Error):
        return None
    return float(threshold) if threshold is not None else None
