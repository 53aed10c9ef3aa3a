"""``python -m bench.remesh_quality``: isotropic_remesh against gpytoolbox and pymeshlab.

Same input, same target edge length L (``--relative`` times the input's mean edge length), same
number of iterations, same feature angle; for each remesher: faces, edge length mean/L and
coefficient of variation, minimum angle, mean per-face minimum angle, share of faces whose smallest
angle is below 30 degrees, fraction of interior vertices
at valence 6, Euler characteristic, edges with more than two faces, and wall time (best of
``--repeat``). Quality figures are measured by one function (``ops.isotropic_remesh.quality``) on
every output. The libraries are used when they import; a missing one is skipped with a note. Writes
JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from workers.engine.dynamic._edges import edge_table, sin_min_angle
from workers.engine.mesh import TriMesh
from workers.engine.ops.isotropic_remesh import quality

#: where our remesher runs: "cpu" (the NumPy twin) or "gpu" (CuPy); set by --device
DEVICE = {"name": "cpu"}


def tessera(V: np.ndarray, F: np.ndarray, L: float, it: int, feat: float) -> Any:
    m = TriMesh.from_arrays(V, F, dtype="float64")
    if DEVICE["name"] == "gpu":
        m = m.to("cupy")
    out = m.run(
        [
            (
                "isotropic_remesh",
                {
                    "target_edge_length": L,
                    "relative": False,
                    "iterations": it,
                    "feature_angle": feat,
                },
            )
        ],
        device=DEVICE["name"],
    ).mesh
    if DEVICE["name"] == "gpu":
        import cupy

        cupy.cuda.Device().synchronize()
        out = out.to("numpy")
    return np.asarray(out.V), np.asarray(out.F)


def gpytoolbox(V: np.ndarray, F: np.ndarray, L: float, it: int, feat: float) -> Any:
    import gpytoolbox as gpy

    return gpy.remesh_botsch(
        V.astype(np.float64),
        F.astype(np.int32),
        i=it,
        h=L,
        project=True,
        detect_feature_edges=feat < 180,
        feature_dihedral_threshold=feat,
    )


def pymeshlab(V: np.ndarray, F: np.ndarray, L: float, it: int, feat: float) -> Any:
    import pymeshlab as pml

    ms = pml.MeshSet()
    ms.add_mesh(pml.Mesh(V.astype(np.float64), F.astype(np.int32)))
    ms.meshing_isotropic_explicit_remeshing(
        iterations=it, targetlen=pml.PureValue(L), featuredeg=feat, adaptive=False
    )
    m = ms.current_mesh()
    return m.vertex_matrix(), m.face_matrix()


REMESHERS: dict[str, Callable[..., Any]] = {
    "tessera": tessera,
    "gpytoolbox.remesh_botsch": gpytoolbox,
    "pymeshlab isotropic_explicit": pymeshlab,
}


def mean_edge_length(V: np.ndarray, F: np.ndarray) -> float:
    E = edge_table(np, F)
    return float(np.linalg.norm(V[E.EV[:, 0]] - V[E.EV[:, 1]], axis=1).mean())


def measure(V: np.ndarray, F: np.ndarray, L: float) -> dict[str, Any]:
    V = np.asarray(V, dtype=np.float64)
    F = np.asarray(F, dtype=np.int64)
    q = quality(np, V, F)
    E = edge_table(np, F)
    used = np.zeros(len(V), bool)
    used[F.ravel()] = True
    return {
        "faces": int(len(F)),
        "mean_over_L": q["edge_length_mean"] / L,
        "edge_length_cv": q["edge_length_cv"],
        "min_angle": q["min_angle"],
        "mean_min_angle": q["mean_min_angle"],
        "below_30": float(np.mean(sin_min_angle(np, *(V[F[:, k]] for k in range(3))) < 0.5)),
        "valence_6": q["valence_6_fraction"],
        "euler": int(used.sum()) - E.n_edges + len(F),
        "nonmanifold_edges": int((np.asarray(E.count) > 2).sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", nargs="+", default=["spot.obj", "rx-torus.obj", "rx-cloth.obj"])
    ap.add_argument("--relative", type=float, default=1.0)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--feature-angle", type=float, default=45.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"], help="where ours runs")
    ap.add_argument(
        "--faces", default="0", help="midpoint-subdivide each mesh to at least this many faces"
    )
    ap.add_argument("--only", nargs="*", default=None, help="remeshers to run (default: all)")
    ap.add_argument(
        "--angle-passes",
        type=int,
        default=None,
        help="our angle repair's passes (isotropic_remesh.ANGLE_PASSES; 0: none)",
    )
    a = ap.parse_args()
    DEVICE["name"] = a.device
    if a.angle_passes is not None:
        from workers.engine.ops import isotropic_remesh

        isotropic_remesh.ANGLE_PASSES = a.angle_passes
    from bench.meshes import bench_mesh
    from tests.conftest import MESHES

    rows: list[dict[str, Any]] = []
    for name in a.meshes:
        m = bench_mesh(MESHES / name, int(float(a.faces))).to("numpy")
        V, F = np.asarray(m.V), np.asarray(m.F, dtype=np.int64)
        L = a.relative * mean_edge_length(V, F)
        name = f"{name} ({len(F)} faces)"
        rows.append({"mesh": name, "remesher": "input", "seconds": 0.0, **measure(V, F, L)})
        for lib, fn in REMESHERS.items():
            if a.only is not None and lib not in a.only:
                continue
            best, out = float("inf"), None
            try:
                for _ in range(a.repeat):
                    t = time.perf_counter()
                    out = fn(V, F, L, a.iterations, a.feature_angle)
                    best = min(best, time.perf_counter() - t)
                    print(json.dumps({"mesh": name, "remesher": lib, "s": best}), flush=True)
            except ImportError as exc:
                rows.append({"mesh": name, "remesher": lib, "skipped": str(exc)})
                continue
            except Exception as exc:  # noqa: BLE001 - a library refusing an input is a row
                refused = f"{exc.__class__.__name__}: {exc}"[:120]
                rows.append({"mesh": name, "remesher": lib, "skipped": refused})
                continue
            rows.append({"mesh": name, "remesher": lib, "seconds": best, **measure(*out, L)})
    cols = ["faces", "mean_over_L", "edge_length_cv", "min_angle", "mean_min_angle", "below_30"]
    cols += ["valence_6", "euler", "nonmanifold_edges", "seconds"]
    head = "| mesh | remesher | " + " | ".join(cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 2)]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['mesh']} | {r['remesher']} | skipped: {r['skipped']} |")
            continue
        vals = [f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols]
        lines.append(f"| {r['mesh']} | {r['remesher']} | " + " | ".join(vals) + " |")
    if a.json:
        a.json.write_text(
            json.dumps(
                {"host": platform.node(), "args": vars(a) | {"json": str(a.json)}, "rows": rows},
                indent=1,
            )
        )
    import sys

    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
