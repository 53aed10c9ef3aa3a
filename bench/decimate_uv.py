"""``python -m bench.decimate_uv``: what ``decimate``'s texture error quadrics (``uv_weight``) do
to textured meshes: spot.obj (shared meshes) and the shared textured assets, welded and
decimated to each ``--ratio`` with each ``--weight`` (``--subdivide loop|midpoint`` subdivides
each input once first).

Per row: the texture stretch after (``report.texture``: median and 95th percentile by area, 1.0
for a map that only scales) and the faces folded in texture space; the texture shift: 16 random
points on every output face, their texture coordinates interpolated against those of the input
surface's closest point (libigl), mean and 95th percentile of the distance in texture units
(points whose closest input face lies across a seam, farther than 0.05, are counted apart as
``across``); for the assets the colour error and the share of faces with the right material
(``bench.assets``' measure, at the same 16 points a face); the geometric error against the
input (sampled symmetric Hausdorff distance and mean distance over the bounding-box diagonal,
``bench.decimate_quality``) and the time. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import igl
import numpy as np

from bench.decimate_quality import hausdorff
from tests.conftest import ASSETS, MESHES
from workers.engine.mesh import TriMesh

#: texture shifts larger than this are points whose closest input face is in another chart
ACROSS = 0.05
#: columns printed as 1.23e-04
SCIENTIFIC = ("hausdorff", "mean", "shift_mean", "shift_p95")
#: random points per output face
SAMPLES = 16


def texture_shift(src: TriMesh, out: TriMesh, seed: int = 0) -> dict[str, float]:
    """Texture coordinates at :data:`SAMPLES` random points of each output face against those
    of the closest point of the input surface: mean and 95th percentile of the distance
    (texture units) over the points within :data:`ACROSS`, and the share of points beyond
    it."""
    rng = np.random.default_rng(seed)
    V1, F1 = np.asarray(out.V, np.float64), np.asarray(out.F, np.int64)
    F1 = np.repeat(F1, SAMPLES, axis=0)
    w = rng.dirichlet([1, 1, 1], size=F1.shape[0])
    p = (V1[F1] * w[:, :, None]).sum(1)
    uv1 = np.repeat(np.asarray(out.corner_attrs["uv"], np.float64), SAMPLES, axis=0)
    got = (uv1 * w[:, :, None]).sum(1)
    V0, F0 = np.asarray(src.V, np.float64), np.asarray(src.F, np.int64)
    _, tid, cp = igl.point_mesh_squared_distance(p, V0, F0)
    A, B, C = V0[F0[tid, 0]], V0[F0[tid, 1]], V0[F0[tid, 2]]
    n = np.cross(B - A, C - A)
    area = np.maximum((n * n).sum(1), 1e-300)
    bc = np.stack(
        [
            (np.cross(C - B, cp - B) * n).sum(1) / area,
            (np.cross(A - C, cp - C) * n).sum(1) / area,
            (np.cross(B - A, cp - A) * n).sum(1) / area,
        ],
        axis=1,
    )
    want = (np.asarray(src.corner_attrs["uv"], np.float64)[tid] * bc[:, :, None]).sum(1)
    d = np.linalg.norm(got - want, axis=1)
    near = d <= ACROSS
    return {
        "shift_mean": float(d[near].mean()),
        "shift_p95": float(np.quantile(d[near], 0.95)),
        "across": float(1.0 - near.mean()),
    }


def colour_error(name: str, out: TriMesh) -> dict[str, float]:
    """``bench.assets``' look (``tests/workers/engine/test_assets.py``), at :data:`SAMPLES`
    points per output face: the share of points whose material is the one under them on the
    input, and the mean colour difference (0-255 per channel) there."""
    from tests.workers.engine.test_assets import _input, _uv_sets, compare_looks

    rng = np.random.default_rng(0)
    V, F = np.asarray(out.V, np.float64), np.asarray(out.F)
    face = np.repeat(np.arange(F.shape[0]), SAMPLES)
    w = rng.dirichlet([1, 1, 1], size=face.shape[0])
    p = (V[F[face]] * w[:, :, None]).sum(1)
    uv = {
        i: (np.asarray(out.corner_attrs[k], np.float64)[face] * w[:, :, None]).sum(1)
        for i, k in enumerate(_uv_sets(out))
    }
    material = np.asarray(out.face_attrs.get("material", np.zeros(F.shape[0], np.int32)))[face]
    same, diff = compare_looks(name, _input(name), p, material, uv)
    diff = diff if diff.size else np.zeros(1)
    return {"colour": float(diff.mean()), "same_material": float(same.mean())}


def inputs(names: list[str]) -> dict[str, TriMesh]:
    from workers.engine.io import load_bytes

    out = {}
    for name in names:
        path = MESHES / name if name.endswith(".obj") else ASSETS / name
        out[name] = load_bytes(path.read_bytes(), name)
    return out


def row(name: str, src: TriMesh, ratio: float, weight: float) -> dict[str, Any]:
    steps = ["weld", ("decimate", {"target_ratio": ratio, "uv_weight": weight})]
    t = time.perf_counter()
    res = src.run(steps, device="cpu")
    seconds = time.perf_counter() - t
    out = res.mesh.to("numpy")
    tex = res.steps[-1].report.get("texture") or {}
    r: dict[str, Any] = {
        "mesh": name,
        "ratio": ratio,
        "weight": weight,
        "faces": out.n_faces,
        "seconds": seconds,
        "stretch_median": tex.get("after", {}).get("stretch_median"),
        "stretch_p95": tex.get("after", {}).get("stretch_p95"),
        "folded": tex.get("folded_faces"),
    }
    r.update(texture_shift(src, out))
    if not name.endswith(".obj"):
        r.update(colour_error(name, out))
    V0, F0 = np.asarray(src.V, np.float64), np.asarray(src.F, np.int64)
    V1, F1 = np.asarray(out.V, np.float64), np.asarray(out.F, np.int64)
    r.update(hausdorff(V0, F0, V1, F1, 20_000))
    return r


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.decimate_uv", description=__doc__)
    ap.add_argument(
        "--mesh",
        action="append",
        default=[],
        help="spot.obj or an asset's file name (default: spot and the textured assets)",
    )
    ap.add_argument(
        "--subdivide",
        choices=["loop", "midpoint"],
        help="subdivide each input once (welded) before decimating it",
    )
    ap.add_argument("--ratio", type=float, action="append", default=[])
    ap.add_argument("--weight", type=float, action="append", default=[])
    args = ap.parse_args()
    names = args.mesh or ["spot.obj", "Duck.glb", "CesiumMilkTruck.glb", "fuze.zip"]
    ratios = args.ratio or [0.5, 0.2, 0.1]
    weights = args.weight or [0.0, 1.0]
    cols = [
        "mesh", "ratio", "weight", "faces", "seconds", "stretch_median", "stretch_p95", "folded",
        "shift_mean", "shift_p95", "across", "colour", "same_material", "hausdorff", "mean",
    ]  # fmt: skip
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name, src in inputs(names).items():
        if args.subdivide:
            steps = ["weld", ("subdivide", {"scheme": args.subdivide})]
            src = src.run(steps, device="cpu").mesh.to("numpy")
        for ratio in ratios:
            for weight in weights:
                r = row(name, src, ratio, weight)
                cells = []
                for c in cols:
                    v = r.get(c, "")
                    if isinstance(v, float) and c in SCIENTIFIC:
                        cells.append(f"{v:.2e}")
                    elif isinstance(v, float):
                        cells.append(f"{v:.4g}")
                    else:
                        cells.append(str(v))
                print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
