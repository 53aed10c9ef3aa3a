"""What a worker does with one claimed job: load, run the pipeline, serialize, store.

Pure engine plus blob store; no Redis and no process plumbing, so it is tested directly and runs
the same inside the GPU child.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .engine.artifacts import MEDIA_TYPES as MATRIX_MEDIA_TYPES
from .engine.artifacts import serialize_matrix
from .engine.io import serialize_chunks
from .engine.mesh import TriMesh
from .engine.ops.stats import mesh_stats
from .engine.pipeline import run_pipeline
from .queue.blobs import BlobStore, artifact_key, input_key, result_key

Progress = Callable[[float, str], None]

MEDIA_TYPES = {
    "ply": "application/x-ply",
    "obj": "model/obj",
    "off": "application/x-off",
    "stl": "model/stl",
    "glb": "model/gltf-binary",
    "npz": "application/x-npz",
}


def encode_input(mesh: TriMesh) -> bytes:
    """The canonical stored form of an accepted upload: uncompressed NPZ of the parsed arrays."""
    buf = io.BytesIO()
    arrays: dict[str, Any] = {"V": mesh.V, "F": mesh.F}
    arrays.update({f"vertex.{k}": v for k, v in mesh.vertex_attrs.items()})
    arrays.update({f"face.{k}": v for k, v in mesh.face_attrs.items()})
    np.savez(buf, **arrays)
    return buf.getvalue()


def decode_input(data: bytes) -> TriMesh:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    va = {k[7:]: v for k, v in arrays.items() if k.startswith("vertex.")}
    fa = {k[5:]: v for k, v in arrays.items() if k.startswith("face.")}
    # already checked when the upload was accepted
    return TriMesh(arrays["V"], arrays["F"], va, fa)


def execute(
    job_id: str,
    attempt: int,
    spec: dict[str, Any],
    store: BlobStore,
    progress: Progress | None = None,
    input_name: str = "",
) -> dict[str, Any]:
    """Run a job's spec on its stored input; write the result blob. Returns the fields the job
    record gets on success: result, timings, stats before/after, per-step reports, backend."""

    def report(p: float, stage: str) -> None:
        if progress:
            progress(p, stage)

    timings: dict[str, float] = {}
    t = time.perf_counter()
    report(0.0, "load")
    mesh = decode_input(store.get_bytes(input_key(job_id)))
    timings["load"] = time.perf_counter() - t

    t = time.perf_counter()
    stats_before = mesh_stats(mesh)
    timings["stats_before"] = time.perf_counter() - t

    def pipeline_progress(p: float, stage: str) -> None:
        report(0.05 + 0.85 * p, stage)

    result = run_pipeline(
        mesh,
        spec.get("pipeline", []),
        device=spec.get("device", "auto"),
        progress=pipeline_progress,
    )
    timings.update(result.timings)
    if result.patching:  # inside the step that built them
        timings["patching"] = sum(p["seconds"] for p in result.patching)
    out = result.mesh

    t = time.perf_counter()
    stats_after = mesh_stats(out)
    timings["stats_after"] = time.perf_counter() - t

    report(0.9, "serialize")
    output = spec.get("output") or {}
    fmt = output.get("format", "ply")
    t = time.perf_counter()
    chunks = serialize_chunks(
        out, fmt, output.get("attributes"), polygons=output.get("polygons", True)
    )
    key = result_key(job_id, attempt, fmt)
    # the file goes to the store piece by piece as it is written: "serialize" includes storing it
    n_bytes = store.put_chunks(key, chunks)
    timings["serialize"] = time.perf_counter() - t

    report(0.95, "store")
    t = time.perf_counter()
    stem = (input_name.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "result")[:100]
    artifacts = {}
    mfmt = output.get("matrix_format", "npz")
    for name, value in result.artifacts.items():
        blob = serialize_matrix(value, mfmt)
        akey = artifact_key(job_id, attempt, name, mfmt)
        store.put_bytes(akey, blob)
        artifacts[name] = {
            "key": akey,
            "format": mfmt,
            "bytes": len(blob),
            "filename": f"{stem}.{name}.{mfmt}",
            "media_type": MATRIX_MEDIA_TYPES[mfmt],
        }
    timings["store"] = time.perf_counter() - t

    return {
        "result": {
            "key": key,
            "format": fmt,
            "bytes": n_bytes,
            "filename": f"{stem}.{fmt}",
            "media_type": MEDIA_TYPES[fmt],
        },
        "timings": timings,
        "stats_before": stats_before,
        "stats_after": stats_after,
        "reports": [
            {
                "op": s.op,
                "params": s.params,
                "seconds": s.seconds,
                "backend": s.backend,
                "report": s.report,
            }
            for s in result.steps
        ],
        "backend": result.backend,
        "artifacts": artifacts,
        "patching": result.patching,
    }
