"""``/v1/operations``: the catalogue, derived from the operation registry."""

from __future__ import annotations

from fastapi import APIRouter

from workers.engine.ops import OPS

from ..errors import PROBLEM, ProblemError
from ..schemas import OperationPublic, OperationsPublic

router = APIRouter(prefix="/v1/operations", tags=["operations"])


@router.get("", response_model=OperationsPublic, summary="Every operation with its parameters")
def list_operations() -> OperationsPublic:
    data = [OperationPublic(**entry) for entry in OPS.catalogue()]
    return OperationsPublic(data=data, count=len(data))


@router.get(
    "/{name}",
    response_model=OperationPublic,
    responses={404: {"content": {PROBLEM: {}}, "description": "Problem details"}},
    summary="One operation",
)
def get_operation(name: str) -> OperationPublic:
    if name not in OPS:
        raise ProblemError(404, "operation.not_found", "no such operation", name=name[:64])
    return OperationPublic(**OPS.get(name).catalogue_entry())
