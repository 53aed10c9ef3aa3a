"""``/v1/jobs/{id}/preview``: the input or the result as compact arrays for the page's 3D view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from workers.engine.io import load_bytes, stored
from workers.engine.mesh import TriMesh
from workers.queue.blobs import BlobNotFound, input_key, read_input

from .. import preview
from ..auth import CallerDep, caller
from ..deps import QueueDep, StoreDep
from ..errors import ProblemError
from .jobs import _ERRORS, _expired, _finished, _record

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], dependencies=[Depends(caller)])

MEDIA_TYPE = preview.MEDIA_TYPE


def _build(store: Any, key: str, max_faces: int, load: Callable[[], TriMesh]) -> bytes:
    """The preview bytes, made once per mesh and size from ``load()`` and kept beside the job's
    blobs (they go with them when the job expires)."""
    try:
        return store.get_bytes(key)  # type: ignore[no-any-return]
    except BlobNotFound:
        pass
    try:
        mesh = load()
    except BlobNotFound:
        raise ProblemError(410, "job.result_missing", "the mesh is no longer stored") from None
    out = preview.encode(mesh, max_faces)
    store.put_bytes(key, out)
    return out


@router.get(
    "/{job_id}/preview",
    responses={
        200: {
            "content": {MEDIA_TYPE: {}},
            "description": "`TPV1`, a uint32 header length, a JSON header (counts, buffers with "
            "byte offsets, attribute ranges), then float32 positions, uint32 triangle indices, "
            "optional float32 normals and one float32 array per scalar attribute.",
        },
        **_ERRORS,
    },
    response_class=Response,
    summary="The input or result mesh, reduced for a 3D preview",
    description="For the browser page: positions, triangles, normals and scalar vertex and face "
    "attributes as little-endian arrays. Meshes with more than `max_faces` faces are reduced by "
    "vertex clustering (attributes averaged), so the preview stays light; downloads are always "
    "the full mesh. The input is available as soon as the job exists, the result once it "
    "succeeded.",
)
async def get_preview(
    job_id: str,
    queue: QueueDep,
    store: StoreDep,
    who: CallerDep,
    mesh: Annotated[
        Literal["input", "result"], Query(description="Which mesh: the upload or the result.")
    ] = "result",
    max_faces: Annotated[
        int, Query(ge=1000, le=2_000_000, description="Most faces sent; more are reduced.")
    ] = preview.DEFAULT_MAX_FACES,
) -> Response:
    if mesh == "result":
        rec = await run_in_threadpool(_finished, queue, job_id, who)
        blob = rec["result"]
        source = blob["key"]

        def load() -> TriMesh:
            return load_bytes(store.get_bytes(source), blob["filename"])
    else:
        rec = await run_in_threadpool(_record, queue, job_id, who)
        if _expired(rec):
            raise ProblemError(410, "job.expired", "the job's result has expired", id=job_id)
        source = input_key(job_id)  # the preview's name, whichever form the input is stored in

        def load() -> TriMesh:
            return stored.decode(read_input(store, job_id))

    key = f"{source}.preview-{max_faces}.tpv"
    data = await run_in_threadpool(_build, store, key, max_faces, load)
    return Response(data, media_type=MEDIA_TYPE, headers={"Cache-Control": "private, max-age=60"})
