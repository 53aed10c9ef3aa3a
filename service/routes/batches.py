"""``/v1/batches``: one pipeline over many meshes (an archive, or several files)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Header, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError
from starlette.concurrency import iterate_in_threadpool

from tessera.zipstream import StoredZip
from workers.queue.batches import (
    QUOTA_PREFIX,
    BatchQueue,
    BatchView,
    EndedItems,
    manifest_line,
)
from workers.queue.blobs import BlobNotFound, BlobStore
from workers.queue.s3batch import write_manifest

from ..auth import CallerDep, admit, caller, counts_bytes, release
from ..batches import accept_batch
from ..deps import BaseUrlDep, QueueDep, SettingsDep, StoreDep
from ..early import EarlyChunks
from ..errors import PROBLEM, ProblemError
from ..schemas import BatchPublic, BatchS3Places, batch_public
from ..spool import Body, read_body, upload_body
from .jobs import body_form, checked_spec, content_disposition

router = APIRouter(prefix="/v1/batches", tags=["batches"], dependencies=[Depends(caller)])

_PROBLEM_RESPONSE: dict[str, Any] = {"content": {PROBLEM: {}}, "description": "Problem details"}
_ERRORS = {s: _PROBLEM_RESPONSE for s in (401, 404, 409, 410, 413, 422, 429, 503)}
#: a batch over S3 prefixes may also be refused a prefix (batch.s3_prefix_not_allowed)
_CREATE_ERRORS = {**_ERRORS, 403: _PROBLEM_RESPONSE}
MAX_WAIT_SECONDS = 60.0

log = logging.getLogger(__name__)

#: besides the multipart form: the archive as the body (any type but a form's: application/zip,
#: application/x-tar, application/octet-stream...)
_BODY_FORMS: dict[str, Any] = {
    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
    "application/json": {"schema": {"$ref": "#/components/schemas/BatchFromS3"}},
}


def batches_of(request: Request) -> BatchQueue:
    bq = getattr(request.app.state, "batches", None)
    if bq is None:
        bq = request.app.state.batches = BatchQueue(request.app.state.queue)
    return bq  # type: ignore[no-any-return]


BatchesDep = Annotated[BatchQueue, Depends(batches_of)]


def _view(batches: BatchQueue, batch_id: str, who: str | None, items: bool = False) -> BatchView:
    if not batch_id.isalnum() or len(batch_id) > 64:
        raise ProblemError(404, "batch.not_found", "no such batch", id=batch_id[:64])
    view = batches.get(batch_id, items=items)
    if view is None or (who is not None and view.record.get("key_id") != who):
        raise ProblemError(404, "batch.not_found", "no such batch", id=batch_id)
    return view


@router.post(
    "",
    status_code=202,
    response_model=BatchPublic,
    responses={
        200: {"model": BatchPublic, "description": "A repeated request (same Idempotency-Key)."},
        400: _PROBLEM_RESPONSE,
        **_CREATE_ERRORS,
    },
    summary="Submit many meshes and one pipeline",
    description="Three forms of body, told apart by `Content-Type`:\n\n"
    "- `multipart/form-data`: the files in `files` (each a mesh, or a zip or tar archive of "
    "meshes), the job spec (JSON, see `JobCreate`) in `spec`;\n"
    "- any other type, e.g. `application/zip`, `application/x-tar`: a zip or tar archive "
    "(a tar may be compressed) as the whole body, the job spec in the `Tessera-Spec` "
    "header;\n"
    "- `application/json` (on a deployment whose blob store is S3): the job spec with an S3 "
    "prefix to read the meshes from and, optionally, one to write the results to (see "
    "`BatchFromS3`); the prefixes must be among those the deployment allows.\n\n"
    "Every file is an item, run through the pipeline as a job of its own would be; a file "
    "that cannot be read or run fails alone. Answers 202 with the batch.",
    openapi_extra={
        "x-spec-schema": {"$ref": "#/components/schemas/JobCreate"},
        "requestBody": {"content": _BODY_FORMS},
    },
)
async def create_batch(
    request: Request,
    queue: QueueDep,
    batches: BatchesDep,
    store: StoreDep,
    settings: SettingsDep,
    base: BaseUrlDep,
    who: CallerDep,
    spec: Annotated[str, Form(description="The job spec as JSON (schema: JobCreate).")] = "{}",
    files: Annotated[
        list[UploadFile] | None,
        File(description="The meshes, or zip/tar archives of meshes (their paths are kept)."),
    ] = None,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)] = None,
    spec_header: Annotated[
        str | None,
        Header(
            alias="Tessera-Spec",
            max_length=65536,
            description="The job spec as JSON, when the body is the archive itself.",
        ),
    ] = None,
    filename: Annotated[
        str | None, Query(max_length=1000, description="The archive's name (optional).")
    ] = None,
) -> JSONResponse:
    if idempotency_key and who is not None:
        idempotency_key = f"{who}:{idempotency_key}"
    places: BatchS3Places | None = None
    bodies: list[Body] = []  # closed once the batch is stored
    early: EarlyChunks | None = None
    form = body_form(request.headers.get("content-type"))
    extra = {"base_url": base, **({"key_id": who} if who is not None else {})}
    try:
        if form == "json":
            spec, places = s3_body(await request.body())
            uploads = []
        elif form == "multipart":
            bodies = [await upload_body(f) for f in files or []]
            uploads = [(f.filename or "", b.data) for f, b in zip(files or [], bodies, strict=True)]
        else:
            if spec_header is None:
                raise ProblemError(
                    422,
                    "spec.missing",
                    "an archive sent as the request body needs its job spec in the Tessera-Spec "
                    "header",
                )
            spec = spec_header
            await checked_spec(spec, who, settings, queue)  # before the body: a refusal is quick
            early = await run_in_threadpool(
                _early_chunks, request, who, queue, batches, store, settings, spec,
                idempotency_key, extra,
            )  # fmt: skip
            written = early.written if early is not None else None
            bodies = [await read_body(request, written=written)]
            uploads = [(filename or "batch.zip", bodies[0].data)] if len(bodies[0]) else []
        if not uploads and places is None:
            raise ProblemError(422, "batch.empty", "the batch holds no files")
        if form != "file":  # the body itself was checked before it was read
            await checked_spec(spec, who, settings, queue)  # as for a job
        upload_bytes = sum(len(b) for _, b in uploads)
        accepted = await run_in_threadpool(
            accept_batch,
            queue=queue,
            batches=batches,
            store=store,
            settings=settings,
            spec_text=spec,
            files=uploads,
            idempotency_key=idempotency_key,
            extra=extra,
            admit=lambda batch_id: admit(request, who, QUOTA_PREFIX + batch_id, upload_bytes),
            s3=places,
            early=early,
        )
    finally:
        uploads = []
        if early is not None:  # before the body's file closes: its thread reads it
            await run_in_threadpool(early.close)
        for b in bodies:
            b.close()
    view = await run_in_threadpool(_view, batches, accepted.batch_id, who)
    out = batch_public(view, base, time.time())
    return JSONResponse(
        out.model_dump(mode="json"),
        status_code=200 if accepted.replayed else 202,
        headers={"Location": out.url},
    )


def _early_chunks(
    request: Request,
    who: str | None,
    queue: Any,
    batches: BatchQueue,
    store: BlobStore,
    settings: Any,
    spec: str,
    idempotency_key: str | None,
    extra: dict[str, Any],
) -> EarlyChunks | None:
    """What queues an archive's first chunks while it comes (:mod:`service.early`), unless
    the caller's key has a quota of bytes (the batch's size must be known to admit it) or the
    Idempotency-Key was used before (the request is compared whole with that one's)."""
    if counts_bytes(request, who):
        return None
    if idempotency_key and batches.idempotent_batch(idempotency_key) is not None:
        return None
    return EarlyChunks(
        queue=queue,
        batches=batches,
        store=store,
        settings=settings,
        spec_text=spec,
        idempotency_key=idempotency_key,
        extra=extra,
        admit=lambda batch_id: admit(request, who, QUOTA_PREFIX + batch_id, 0),
        release=lambda batch_id: release(request, who, QUOTA_PREFIX + batch_id),
    )


def s3_body(body: bytes) -> tuple[str, BatchS3Places]:
    """The JSON body of a batch over an S3 prefix: its spec (as JSON text, checked as a job's
    is) and where it reads and writes (:class:`BatchFromS3`)."""
    try:
        doc = json.loads(body or b"null")
    except ValueError as exc:
        raise ProblemError(
            422, "batch.body_invalid", "the body is not JSON", reason=str(exc)[:200]
        ) from None
    if not isinstance(doc, dict):
        raise ProblemError(
            422,
            "batch.body_invalid",
            "a JSON body is an object: spec, input and output (schema: BatchFromS3)",
        )
    spec = json.dumps(doc.pop("spec", {}))
    try:
        places = BatchS3Places.model_validate(doc)
    except ValidationError as exc:
        raise ProblemError(
            422,
            "batch.body_invalid",
            "the body's input and output are not as BatchFromS3 says",
            errors=[
                {"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors(include_url=False)
            ][:20],
        ) from None
    return spec, places


@router.get("/{batch_id}", response_model=BatchPublic, responses=_ERRORS, summary="A batch's state")
async def get_batch(
    batch_id: str,
    batches: BatchesDep,
    base: BaseUrlDep,
    who: CallerDep,
    items: Annotated[bool, Query(description="List every item's state and outcome.")] = False,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            description="Long poll: answer as soon as the batch has ended, or after this many "
            "seconds.",
        ),
    ] = 0.0,
) -> BatchPublic:
    view = await run_in_threadpool(_view, batches, batch_id, who, items)
    deadline = time.monotonic() + wait
    while not view.finished and time.monotonic() < deadline:
        await asyncio.sleep(min(0.25, max(deadline - time.monotonic(), 0.0)))
        view = await run_in_threadpool(_view, batches, batch_id, who, items)
    return batch_public(view, base, time.time())


@router.get(
    "/{batch_id}/result",
    responses={
        200: {
            "content": {"application/zip": {}},
            "description": "A zip: every item's result at its input's path (with the output "
            "format's extension), and manifest.jsonl, one line per item.",
        },
        **_ERRORS,
    },
    summary="Download every result and the manifest",
)
def get_batch_result(
    batch_id: str,
    batches: BatchesDep,
    store: StoreDep,
    who: CallerDep,
    follow: Annotated[
        bool,
        Query(
            description="On a batch that has not ended: send each result as its item ends, "
            "and the manifest when the batch ends (the download runs beside the batch; the "
            "stream is silent while no item ends). Without it, such a batch is "
            "`batch.not_ready` (409)."
        ),
    ] = False,
) -> StreamingResponse:
    view = _view(batches, batch_id, who)
    if not view.finished and not follow:
        raise ProblemError(
            409,
            "batch.not_ready",
            "the batch has not ended (follow=true sends the results as they end)",
            id=batch_id,
            state=view.state,
        )
    if view.expires_at and time.time() > view.expires_at:
        raise ProblemError(410, "batch.expired", "the batch's results have expired", id=batch_id)
    if view.finished:
        items = _view(batches, batch_id, who, items=True).items or []
        body: Any = _joined(_archive(store, items))
    else:
        body = _waiting(_joined(_followed(batches, store, batch_id)))
    return StreamingResponse(
        body,
        media_type="application/zip",
        headers={"Content-Disposition": content_disposition(f"batch-{batch_id}.zip")},
    )


#: results up to this are read whole (and sent joined with others up to about this size);
#: larger ones in pieces of this size
PIECE = 4 << 20
#: how often a followed batch is looked at while none of its items ends
FOLLOW_POLL = 0.25


def _joined(pieces: Iterator[bytes | None]) -> Iterator[bytes | None]:
    """The archive's pieces joined up to about :data:`PIECE` (each piece is a hop from the
    thread that makes it to the event loop: one per small result would be 10,000). A None
    (a followed batch has nothing new now) sends what is held, then passes on."""
    held: list[bytes] = []
    size = 0
    for piece in pieces:
        if piece is None or len(piece) >= PIECE:
            if held:
                yield b"".join(held)
                held, size = [], 0
            yield piece
            continue
        held.append(piece)
        size += len(piece)
        if size >= PIECE:
            yield b"".join(held)
            held, size = [], 0
    if held:
        yield b"".join(held)


async def _waiting(pieces: Iterator[bytes | None]) -> AsyncIterator[bytes]:
    """Each piece made on a worker thread; a None waits :data:`FOLLOW_POLL` on the event loop
    (not on a thread: a followed batch may run for hours)."""
    async for piece in iterate_in_threadpool(pieces):
        if piece is None:
            await asyncio.sleep(FOLLOW_POLL)
        else:
            yield piece


def _archive(store: BlobStore, items: list[dict[str, Any]]) -> Iterator[bytes]:
    """The result archive of an ended batch: each succeeded item's result under its output
    path (stored, its CRC-32 the one its worker computed while writing it, or computed here for
    a result recorded without one), then ``manifest.jsonl``."""
    zw = StoredZip()
    missing: dict[int, dict[str, Any]] = {}
    yield from _results(zw, store, items, missing)
    yield from _manifest(zw, items, missing)


def _followed(batches: BatchQueue, store: BlobStore, batch_id: str) -> Iterator[bytes | None]:
    """The result archive of a batch that has not ended: each result as its item ends (None
    while none does), then, once the batch has ended, ``manifest.jsonl`` of every item."""
    zw = StoredZip()
    missing: dict[int, dict[str, Any]] = {}
    ended = EndedItems(batches, batch_id)
    while True:
        view, new = ended.new()
        if view is None:  # expired and dropped while followed: the archive cannot be ended
            raise OSError(f"batch {batch_id} is gone")
        if new:
            yield from _results(zw, store, new, missing)
        elif view.finished:
            break
        else:
            yield None
    final = batches.get(batch_id, items=True)
    items = (final.items if final else None) or []
    yield from _results(zw, store, [i for i in items if i["index"] not in ended.given], missing)
    yield from _manifest(zw, items, missing)


_RESULT_MISSING = {"code": "batch.result_missing", "message": "the result is no longer stored"}


def _results(
    zw: StoredZip,
    store: BlobStore,
    items: list[dict[str, Any]],
    missing: dict[int, dict[str, Any]],
) -> Iterator[bytes]:
    """The succeeded items' results as members; ``missing`` gets those no longer stored."""
    for item in items:
        if item["state"] != "succeeded":
            continue
        try:
            body = store.open(item["key"])
        except (BlobNotFound, FileNotFoundError):
            missing[item["index"]] = {"state": "failed", "error": _RESULT_MISSING}
            continue
        with body:
            yield from _member(zw, item["output"], body, item.get("bytes"), item.get("crc32"))


def _manifest(
    zw: StoredZip, items: list[dict[str, Any]], missing: dict[int, dict[str, Any]]
) -> Iterator[bytes]:
    lines = [json.dumps(manifest_line({**i, **missing.get(i["index"], {})})) for i in items]
    manifest = ("\n".join(lines) + "\n").encode()
    yield zw.member("manifest.jsonl", len(manifest), zlib.crc32(manifest))
    yield manifest
    yield zw.end()


def _member(
    zw: StoredZip, name: str, body: Any, size: int | None, crc: int | None
) -> Iterator[bytes]:
    if crc is None or size is None or size <= PIECE:
        data = body.read()
        if crc is None or len(data) != size:
            crc = zlib.crc32(data)
        yield zw.member(name, len(data), crc)
        yield data
        return
    yield zw.member(name, size, crc)
    left = size
    while left > 0:
        piece = body.read(min(PIECE, left))
        if not piece:  # shorter than recorded: the archive would be corrupt from here
            raise OSError(f"the result of {name!r} is shorter than its record")
        left -= len(piece)
        yield piece


@router.delete(
    "/{batch_id}",
    response_model=BatchPublic,
    responses=_ERRORS,
    summary="Cancel a batch (its items that have not ended)",
)
def cancel_batch(
    batch_id: str, batches: BatchesDep, store: StoreDep, base: BaseUrlDep, who: CallerDep
) -> BatchPublic:
    view = _view(batches, batch_id, who)
    if view.finished:
        if view.expires_at and time.time() > view.expires_at:
            raise ProblemError(410, "batch.expired", "the batch has expired", id=batch_id)
        if view.state != "cancelled":
            raise ProblemError(
                409,
                "batch.already_finished",
                "the batch has already finished",
                id=batch_id,
                state=view.state,
            )
        return batch_public(view, base, time.time())
    batches.cancel(batch_id)
    try:  # an S3 output prefix gets the manifest of what ended before the cancel
        write_manifest(batches, store, batch_id)
    except Exception as exc:
        log.error("could not write batch %s's manifest: %s", batch_id, exc)
    batches.notify_if_ended(batch_id)
    return batch_public(_view(batches, batch_id, who), base, time.time())
