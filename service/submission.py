"""Accepting a job: validate the spec, parse the mesh, store the input, queue the job.

Everything a caller can get wrong is checked here, before anything is stored, so that a rejected
upload leaves no job and no blob behind. Runs in the API's thread pool (parsing is CPU work).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from workers.engine.errors import SpecError
from workers.engine.io import OUTPUT_HOLDS, RawLayout, format_can_hold, load_bytes, stored
from workers.engine.mesh import TriMesh
from workers.engine.pipeline import Step, parse_pipeline, starts_with_source
from workers.jobspec import spec_error
from workers.queue.blobs import BlobStore, input_key, job_prefix, manifest_key
from workers.queue.jobs import JobQueue

from .errors import ProblemError
from .schemas import JobCreate


def parse_spec(text: str) -> JobCreate:
    try:
        return JobCreate.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise spec_error(exc) from None


def check_pipeline(spec: JobCreate, steps: list[Step], mesh: TriMesh) -> None:
    """What the worker would refuse before running anything is refused here, before the job is
    stored: a source step after the first, parameters that contradict each other (each step is
    parsed as the worker parses it), a step naming an attribute the mesh does not have at that
    point, and requested attributes that the pipeline does not leave on the mesh or that the
    output format cannot hold (each step's effect on the attributes is followed, e.g.
    ``dual_mesh`` swapping vertex and face attributes). ``steps`` are the spec's pipeline as
    :func:`~workers.engine.pipeline.parse_pipeline` parsed it."""
    available: dict[str, str] = {k: "vertex" for k in mesh.vertex_attrs}
    available.update({k: "face" for k in mesh.face_attrs})
    for step in steps:  # also refuses a step naming an attribute that is not there at that point
        available = step.op.attributes_after(step.params, available)
    fmt = spec.output.format
    if spec.output.compression != "none" and fmt != "glb":
        raise SpecError(
            "only glb output can be compressed",
            code="spec.compression_not_supported",
            format=fmt,
            compression=spec.output.compression,
        )
    if spec.output.attributes is None:
        return  # everything the format holds is written
    for name in spec.output.attributes:
        if name not in available:
            raise SpecError(
                "requested attribute is not produced by the pipeline",
                code="spec.unknown_attribute",
                attribute=name,
                available=sorted(available),
            )
        if not format_can_hold(fmt, name, available[name]):
            raise SpecError(
                "output format cannot hold this attribute",
                code="spec.attribute_not_supported",
                format=fmt,
                attribute=name,
                holds=OUTPUT_HOLDS[fmt],
            )


MAX_FILES = 64


def body_hash(spec_text: str, files: list[tuple[str, bytes]]) -> str:
    """What an Idempotency-Key is bound to: SHA-256 over the digests of the spec, each file's
    name and each file's bytes."""
    h = hashlib.sha256()
    h.update(hashlib.sha256(spec_text.encode()).digest())
    for name, data in files:
        h.update(hashlib.sha256(name.encode()).digest())
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


#: hashes a large upload while it is parsed (hashlib lets go of the GIL)
_HASHER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tessera-hash")


def raw_layout(spec: JobCreate) -> RawLayout | None:
    """How an uploaded ``.raw`` volume is laid out: the first step's volume field says."""
    if not spec.pipeline:
        return None
    field = getattr(spec.pipeline[0], "field", None)
    layout = getattr(field, "raw_layout", None)
    return layout() if callable(layout) else None


def load_files(
    files: list[tuple[str, bytes]], max_expanded: int, raw: RawLayout | None = None
) -> TriMesh:
    """One mesh from the uploaded files: the file itself, or all of them side by side."""
    if len(files) > MAX_FILES:
        raise ProblemError(
            422,
            "upload.too_many_files",
            "too many mesh files in one job",
            files=len(files),
            limit=MAX_FILES,
        )
    meshes = [load_bytes(data, name, max_expanded=max_expanded, raw=raw) for name, data in files]
    if len(meshes) > 1 and any(m.n_faces == 0 for m in meshes):
        raise ProblemError(
            422, "upload.volume_alone", "a volume (.npy) must be the job's only file"
        )
    return meshes[0] if len(meshes) == 1 else TriMesh.concatenate(meshes)


@dataclass
class Accepted:
    job_id: str
    replayed: bool
    #: the job's record when it is known without asking Redis again
    record: dict[str, Any] | None = None


def check_idempotency(queue: JobQueue, key: str | None, digest: str) -> str | None:
    """The job an earlier request with this key created, or None; 409 when the body differs."""
    if not key:
        return None
    prev = queue.idempotent_job(key)
    if prev is None:
        return None
    return earlier_id(prev, digest)


def earlier_id(stored: str, digest: str, field: str = "job_id") -> str:
    """The job's (or batch's: ``field``) id in an idempotency record ``"id|body hash"``; 409 when
    the body differs."""
    earlier, _, prev_hash = stored.partition("|")
    if prev_hash != digest:
        raise ProblemError(
            409,
            "idempotency.conflict",
            "this Idempotency-Key was used with a different request body",
            **{field: earlier},
        )
    return earlier


def accept(
    *,
    queue: JobQueue,
    store: BlobStore,
    spec_text: str,
    files: list[tuple[str, bytes]],
    idempotency_key: str | None,
    upload_seconds: float,
    extra: dict[str, Any] | None = None,
    max_expanded: int,
    deadline_limit: int,
    admit: Callable[[str], None] | None = None,
) -> Accepted:
    """Validate, store and queue a job; ``admit(job_id)`` (the caller's quotas) is called once
    the submission is known to be valid and new, before anything is stored. With an
    Idempotency-Key never seen before, the body's hash is computed while the mesh is parsed."""
    hashing: Future[str] | None = None
    if idempotency_key:
        prev = queue.idempotent_job(idempotency_key)
        if prev is not None:
            return Accepted(earlier_id(prev, body_hash(spec_text, files)), True)
        # the common case: a new key (a race with another request is settled at submit)
        hashing = _HASHER.submit(body_hash, spec_text, files)
    extra = extra or {}
    try:
        spec, mesh, parse_s = _validate(spec_text, files, max_expanded, deadline_limit)
    except BaseException:
        if hashing is not None:
            hashing.cancel()
        raise

    job_id = uuid.uuid4().hex
    # the body's hash: a replay that the submit script finds is compared with it
    body_digest = hashing.result() if hashing is not None else ""
    if idempotency_key:
        earlier = check_idempotency(queue, idempotency_key, body_digest)
        if earlier:  # another request with this key was accepted while this one was parsed
            return Accepted(earlier, True)
    if admit is not None:
        admit(job_id)
    t = time.perf_counter()
    spec_dict: dict[str, Any] = spec.model_dump(mode="json")
    if spec.deadline_seconds is None:
        spec_dict["deadline_seconds"] = deadline_limit
    store.put_chunks(input_key(job_id), stored.encode_chunks(mesh))
    inp = {
        "name": files[0][0][-200:] if files else "",
        "bytes": sum(len(d) for _, d in files),
        "vertices": mesh.n_vertices,
        "faces": mesh.n_faces,
        "parts": [name[-200:] for name, _ in files],
    }
    if mesh.dropped:
        inp["dropped"] = dict(mesh.dropped)
    manifest = {
        "id": job_id,
        "spec": spec_dict,
        "input": inp,
        "created_at": time.time(),
        "idempotency_key": idempotency_key,
        **extra,
        "body_hash": body_digest,
    }
    store.put_bytes(manifest_key(job_id), json.dumps(manifest).encode())
    store_s = time.perf_counter() - t

    fields = {
        "spec": spec_dict,
        "input": inp,
        "timings": {"upload": upload_seconds, "parse": parse_s, "store_input": store_s},
    }
    fields.update(extra)  # the route's: the submitting API key, the base URL for links
    try:
        done = queue.submit_job(
            job_id, fields, idempotency_key=idempotency_key, body_hash=body_digest
        )
    except BaseException:
        store.delete_prefix(job_prefix(job_id))
        raise
    if done.status == "duplicate" and done.duplicate:
        # another request with the same key won the race: drop ours, answer with theirs
        store.delete_prefix(job_prefix(job_id))
        return Accepted(earlier_id(done.duplicate, body_digest), True)
    return Accepted(job_id, False, done.record)


def _validate(
    spec_text: str, files: list[tuple[str, bytes]], max_expanded: int, deadline_limit: int
) -> tuple[JobCreate, TriMesh, float]:
    """The spec and the mesh of a submission, with everything a caller can get wrong checked
    (what the worker would refuse before running anything), and the seconds spent parsing."""
    spec = parse_spec(spec_text)
    if spec.deadline_seconds is not None and spec.deadline_seconds > deadline_limit:
        raise SpecError(
            "deadline above the service's limit",
            code="spec.deadline_too_long",
            limit_seconds=deadline_limit,
        )
    t = time.perf_counter()
    if files:
        mesh = load_files(files, max_expanded, raw_layout(spec))
        steps = parse_pipeline(spec.pipeline)
        if mesh.n_faces == 0 and not starts_with_source(steps):
            raise ProblemError(
                422,
                "upload.volume_needs_source",
                "a volume (.npy) is read only by a source step: start the pipeline with "
                'marching_cubes and field {"type": "volume"}',
            )
    else:
        steps = parse_pipeline(spec.pipeline)
        if not starts_with_source(steps):
            raise ProblemError(
                422,
                "upload.no_mesh",
                "no mesh uploaded: send one in `mesh`, or start the pipeline with a source step "
                "such as marching_cubes",
            )
        # a source step (marching_cubes) makes the mesh: the stored input is an empty one
        mesh = TriMesh(np.zeros((0, 3), dtype=np.float32), np.zeros((0, 3), dtype=np.int32))
    parse_s = time.perf_counter() - t
    check_pipeline(spec, steps, mesh)
    return spec, mesh, parse_s
