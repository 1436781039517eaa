"""Validate a spec, plan one."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from ppo_platform.api.deps import IntakeDep, OwnerDep
from ppo_platform.api.errors import ERROR_RESPONSES, error_responses
from ppo_platform.api.schemas import PlanCreate, PlanPublic, ValidationPublic
from ppo_platform.api.spec_body import SPEC_BODY, read_spec_text
from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.jobs.intake import plan_for_service, plan_lm_for_service
from ppo_platform.jobs.intake_pool import validation_summary
from ppo_platform.planner.use_cases import LM_USE_CASES

router = APIRouter(prefix="/v1", tags=["specs"], responses=ERROR_RESPONSES)


@router.post(
    "/specs/validate",
    response_model=ValidationPublic,
    openapi_extra=SPEC_BODY,
    responses=error_responses(408, 413, 415, 422, 429),
)
async def validate_spec(request: Request, _owner: OwnerDep, intake: IntakeDep) -> Any:
    """Validate a spec (YAML or JSON): 200 with the resolved spec, or 422 with every issue."""
    text = await read_spec_text(request)
    summary = await asyncio.wrap_future(intake.submit(validation_summary, text))
    return ValidationPublic(**summary)


@router.post(
    "/plans",
    response_model=PlanPublic,
    responses={
        200: {"content": {"text/markdown": {"schema": {"type": "string"}}}},
        **error_responses(400, 408, 413, 422, 429),
    },
)
def create_plan(body: PlanCreate, _owner: OwnerDep, accept: str | None = Header(None)) -> Any:
    """Plan a run for an env and budget (or, use case rlhf or reasoning, a model folder and its
    prompts): spec.yaml and skill-ppo-trainer.md (or just the markdown with `Accept:
    text/markdown`)."""
    plan = plan_request(body)
    if accept and "text/markdown" in accept and "application/json" not in accept:
        return PlainTextResponse(plan.markdown, media_type="text/markdown")
    public = PlanPublic(
        spec_yaml=plan.spec_yaml(),
        markdown=plan.markdown,
        summary=plan.summary(),
        warnings=list(plan.warnings),
    )
    return JSONResponse(public.model_dump())


def plan_request(body: PlanCreate) -> Any:
    """The planner for the request's use case (the CLI's: an env plan, or rlhf and reasoning on
    a language model); a field of the other kind is 422, named."""
    lm = body.use_case in LM_USE_CASES
    case = body.use_case
    wrong = [
        SpecIssue(field, message, value, fix=fix)
        for field, value, bad, message, fix in (
            (
                "env_id",
                body.env_id,
                lm and body.env_id is not None,
                f"has no place in a {case} plan (on a language model).",
                "leave out env_id; give model_dir and prompts.",
            ),
            (
                "model_dir",
                body.model_dir,
                lm and body.model_dir is None,
                f"is required for a {case} plan.",
                "give the model folder, relative to the LM folder (e.g. arithmetic/sft).",
            ),
            (
                "prompts",
                body.prompts,
                lm and body.prompts is None,
                f"is required for a {case} plan.",
                "give the JSONL prompt file, relative to the LM folder.",
            ),
            (
                "env_id",
                None,
                not lm and body.env_id is None,
                f"is required for use case {case}.",
                "give a registered env id, or use_case rlhf or reasoning with model_dir and "
                "prompts.",
            ),
            (
                "model_dir",
                body.model_dir,
                not lm and body.model_dir is not None,
                "only plans use case rlhf or reasoning.",
                "set use_case to rlhf (PPO) or reasoning (GRPO), or leave out model_dir.",
            ),
        )
        if bad
    ]
    if wrong:
        raise SpecError(wrong, "request")
    if lm:
        assert body.model_dir is not None and body.prompts is not None
        return plan_lm_for_service(body.model_dir, body.prompts, body.budget, body.overrides, case)
    assert body.env_id is not None
    return plan_for_service(body.env_id, body.budget, case, body.overrides)
