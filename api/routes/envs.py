"""The environments this service can train (its operator's env packages imported)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ppo_platform.api.deps import OwnerDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.schemas import EnvList
from ppo_platform.envs.ids import matching_env_ids
from ppo_platform.envs.packages import imported_env_packages

router = APIRouter(prefix="/v1", tags=["envs"], responses=ERROR_RESPONSES)


@router.get("/envs", response_model=EnvList, responses=error_responses(422))
def list_envs(
    _owner: OwnerDep,
    contains: Annotated[
        str | None,
        Query(max_length=128, description="Only ids containing this text (case-insensitive)."),
    ] = None,
) -> EnvList:
    """Env ids a spec may name here (`env.id`); a spec never names code: the operator's env
    packages (PPO_PLATFORM_ENV_PACKAGES) register the service's own environments."""
    ids = matching_env_ids(contains)
    return EnvList(env_ids=ids, env_packages=list(imported_env_packages()))
