"""Validate a spec, plan one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from api.deps import OwnerDep, ServiceDep
from api.errors import ERROR_RESPONSES
from api.schemas import PlanCreate, PlanPublic, ValidationPublic
from api.spec_body import SPEC_BODY, read_spec_text
from ppo_platform.jobs import kind_of, parse_spec
from ppo_platform.jobs.intake import plan_for_service, total_env_steps

router = APIRouter(prefix="/v1", tags=["specs"], responses=ERROR_RESPONSES)


@router.post("/specs/validate", response_model=ValidationPublic, openapi_extra=SPEC_BODY)
async def validate_spec(request: Request, _owner: OwnerDep, service: ServiceDep) -> Any:
    """Validate a spec (YAML or JSON): 200 with the resolved spec, or 422 with every issue."""
    text = await read_spec_text(request)

    def check() -> ValidationPublic:
        spec = parse_spec(text)
        total_env_steps(spec, "request")
        return ValidationPublic(
            kind=kind_of(spec),  # type: ignore[arg-type]
            name=spec.name,
            spec_hash=spec.spec_hash(),
            spec=spec.resolved(),
        )

    return await run_in_threadpool(check)


@router.post(
    "/plans",
    response_model=PlanPublic,
    responses={200: {"content": {"text/markdown": {"schema": {"type": "string"}}}}},
)
def create_plan(body: PlanCreate, _owner: OwnerDep, accept: str | None = Header(None)) -> Any:
    """Plan a run for an env and budget: spec.yaml and skill-ppo-trainer.md (or just the
    markdown with `Accept: text/markdown`)."""
    plan = plan_for_service(body.env_id, body.budget, body.use_case, body.overrides)
    if accept and "text/markdown" in accept and "application/json" not in accept:
        return PlainTextResponse(plan.markdown, media_type="text/markdown")
    public = PlanPublic(
        spec_yaml=plan.spec_yaml(),
        markdown=plan.markdown,
        summary=plan.summary(),
        warnings=list(plan.warnings),
        plan_only=plan.plan_only,
    )
    return JSONResponse(public.model_dump())
