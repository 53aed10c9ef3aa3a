"""``python -m bench.decimate_quality``: how far ``decimate`` moves the surface, against
fast-simplification, pyfqmr and meshoptimizer (each where installed: ``pip install
fast-simplification pyfqmr meshoptimizer``).

The input is a shared mesh, welded and midpoint-subdivided to at least ``--faces`` faces (as
``python -m bench`` makes its meshes), decimated to ``--ratio`` of its faces by every tool. The
error is the symmetric Hausdorff distance estimated from samples: ``--samples`` points spread over
each surface by area, each point's exact distance to the other surface (closest point on the
nearest triangles by centroid), the largest over both directions; also the mean. Both relative to
the input's bounding-box diagonal. Prints one row per tool and writes JSON under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from bench.meshes import bench_mesh
from workers.engine.backend import to_numpy
from workers.engine.mesh import TriMesh

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------- distances
def closest_on_triangles(P: np.ndarray, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> Any:
    """(k, 3) closest points of triangles ``(A, B, C)`` to points ``P`` (all ``(k, 3)``), by the
    Voronoi-region cases of Ericson, *Real-Time Collision Detection*, 5.1.5, vectorized."""
    ab, ac, ap = B - A, C - A, P - A
    d1, d2 = (ab * ap).sum(1), (ac * ap).sum(1)
    bp = P - B
    d3, d4 = (ab * bp).sum(1), (ac * bp).sum(1)
    cp = P - C
    d5, d6 = (ab * cp).sum(1), (ac * cp).sum(1)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = va + vb + vc
        v = vb / denom
        w = vc / denom
        out = A + ab * v[:, None] + ac * w[:, None]  # inside the face
        t_ab = d1 / (d1 - d3)
        t_ac = d2 / (d2 - d6)
        t_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
    cases = [
        ((d1 <= 0) & (d2 <= 0), A),
        ((d3 >= 0) & (d4 <= d3), B),
        ((d6 >= 0) & (d5 <= d6), C),
        ((vc <= 0) & (d1 >= 0) & (d3 <= 0), A + ab * t_ab[:, None]),
        ((vb <= 0) & (d2 >= 0) & (d6 <= 0), A + ac * t_ac[:, None]),
        ((va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0), B + (C - B) * t_bc[:, None]),
    ]
    done = np.zeros(P.shape[0], dtype=bool)
    for mask, q in cases:
        take = mask & ~done
        out[take] = q[take]
        done |= take
    bad = ~np.isfinite(out).all(axis=1)  # zero-area triangles: their first corner
    out[bad] = A[bad]
    return out


def surface_distance(P: np.ndarray, V: np.ndarray, F: np.ndarray, k: int = 16) -> np.ndarray:
    """(n,) distance of each point to the triangle mesh ``(V, F)``: exact, by libigl's AABB tree
    where libigl is installed; else the exact distance to the ``k`` triangles with the nearest
    centroids, which overestimates it where a large triangle lies beside many small ones (a
    decimated CAD part's flat faces next to its fillets: fandisk at 10 % measured 0.055 of the
    diagonal by centroids, 0.003 exactly)."""
    try:
        import igl

        d2, _, _ = igl.point_mesh_squared_distance(
            np.ascontiguousarray(P, dtype=np.float64),
            np.ascontiguousarray(V, dtype=np.float64),
            np.ascontiguousarray(F, dtype=np.int64),
        )
        return np.sqrt(np.maximum(d2, 0.0))
    except ImportError:
        pass
    k = min(k, F.shape[0])
    tree = cKDTree(V[F].mean(axis=1))
    _, cand = tree.query(P, k=k)
    cand = cand.reshape(P.shape[0], k)
    best = np.full(P.shape[0], np.inf)
    for j in range(k):  # k passes over all points, each vectorized
        f = F[cand[:, j]]
        q = closest_on_triangles(P, V[f[:, 0]], V[f[:, 1]], V[f[:, 2]])
        best = np.minimum(best, np.linalg.norm(P - q, axis=1))
    return best


def sample_surface(V: np.ndarray, F: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """(n, 3) points uniformly distributed over the surface by area (seeded)."""
    rng = np.random.default_rng(seed)
    A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(B - A, C - A), axis=1)
    f = rng.choice(F.shape[0], size=n, p=area / area.sum())
    r1, r2 = rng.random(n), rng.random(n)
    s = np.sqrt(r1)
    u, v = 1 - s, s * (1 - r2)
    return A[f] * u[:, None] + B[f] * v[:, None] + C[f] * (1 - u - v)[:, None]


def hausdorff(
    V1: np.ndarray, F1: np.ndarray, V2: np.ndarray, F2: np.ndarray, samples: int
) -> dict[str, float]:
    """Sampled symmetric Hausdorff distance and mean distance between two surfaces, relative to
    the first one's bounding-box diagonal."""
    diag = float(np.linalg.norm(V1.max(axis=0) - V1.min(axis=0)))
    d12 = surface_distance(np.concatenate([sample_surface(V1, F1, samples), V1]), V2, F2)
    d21 = surface_distance(np.concatenate([sample_surface(V2, F2, samples, 1), V2]), V1, F1)
    return {
        "hausdorff": float(max(d12.max(), d21.max())) / diag,
        "mean": float(0.5 * (d12.mean() + d21.mean())) / diag,
    }


# ------------------------------------------------------------------------------- tools
def tools(device: str, preserve_boundary: bool = True) -> dict[str, Any]:
    """name -> fn(V float64, F int64, ratio) -> (V, F) for each available decimator (ours with
    ``preserve_boundary`` as given)."""
    from workers.engine.pipeline import run_pipeline

    def ours(V: np.ndarray, F: np.ndarray, ratio: float) -> tuple[Any, Any]:
        m = TriMesh.from_arrays(V, F, dtype="float64")
        step = ("decimate", {"target_ratio": ratio, "preserve_boundary": preserve_boundary})
        res = run_pipeline(m, [step], device=device)
        return to_numpy(res.mesh.V), to_numpy(res.mesh.F)

    out: dict[str, Any] = {f"tessera decimate ({device})": ours}
    try:
        import fast_simplification

        out["fast-simplification"] = lambda V, F, r: fast_simplification.simplify(
            V.astype(np.float32), F.astype(np.int32), target_reduction=1.0 - r
        )
    except ImportError:
        pass
    try:
        import pyfqmr

        def fqmr(V: np.ndarray, F: np.ndarray, r: float) -> tuple[Any, Any]:
            s = pyfqmr.Simplify()
            s.setMesh(V, F)
            s.simplify_mesh(target_count=int(r * F.shape[0]), aggressiveness=7, verbose=False)
            v, f, _ = s.getMesh()
            return v, f

        out["pyfqmr"] = fqmr
    except ImportError:
        pass
    try:
        import meshoptimizer

        def meshopt(V: np.ndarray, F: np.ndarray, r: float) -> tuple[Any, Any]:
            idx = F.astype(np.uint32).ravel()
            Vf = np.ascontiguousarray(V, dtype=np.float32)
            dst = np.zeros_like(idx)
            target = int(r * F.shape[0]) * 3
            n = meshoptimizer.simplify(
                dst,
                idx,
                Vf,
                index_count=idx.size,
                vertex_count=Vf.shape[0],
                target_index_count=target,
                target_error=1.0,
            )
            return V, dst[:n].reshape(-1, 3).astype(np.int64)

        out["meshoptimizer"] = meshopt
    except (ImportError, AttributeError):
        pass
    return out


def _in_child(fn: Any, V: np.ndarray, F: np.ndarray, ratio: float, conn: Any) -> None:
    try:
        V2, F2 = fn(V, F, ratio)[:2]
        conn.send((np.asarray(V2, dtype=np.float64), np.asarray(F2, dtype=np.int64)))
    except Exception as exc:  # noqa: BLE001 - reported as the row's error
        conn.send(f"{exc.__class__.__name__}: {exc}"[:200])


def isolated(fn: Any, V: np.ndarray, F: np.ndarray, ratio: float) -> tuple[Any, Any] | str:
    """``fn(V, F, ratio)`` in a child process: ``(V, F)``, or the error as text (a library that
    crashes the process, as fast-simplification does on rx-cube at 1 %, gives a row, not an end
    to the sweep)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_in_child, args=(fn, V, F, ratio, child))
    proc.start()
    child.close()
    got = parent.recv() if parent.poll(600) else "no answer in 600 s"
    proc.join(5)
    if proc.exitcode not in (0, None):
        return f"the process ended with {proc.exitcode}"
    return got  # type: ignore[no-any-return]


def shuffled(V: np.ndarray, F: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The same surface with its vertices and faces in a random order (``seed``; 0: as it is).
    A decimator's choices among equal costs, and so its largest error, follow the order."""
    if seed == 0:
        return V, F
    rng = np.random.default_rng(seed)
    perm = rng.permutation(V.shape[0])
    new_id = np.empty_like(perm)
    new_id[perm] = np.arange(perm.shape[0])
    return V[perm], new_id[F][rng.permutation(F.shape[0])]


def versus(a: float, b: float) -> tuple[bool, str]:
    """Our error ``a`` against fast-simplification's ``b``: whether it is over 1.2 times, and the
    table cell."""
    q = a / b if b > 0 else (0.0 if a == 0 else float("inf"))
    return q > 1.2, f"{q:.2f}" + (" **over 1.2**" if q > 1.2 else "")


def sweep(ratios: list[float], samples: int, device: str, orders: int = 1) -> None:
    """Every shared mesh as it is (no subdivision) at each ratio, in ``orders`` vertex orders
    (the file's, then shuffled): our Hausdorff error over fast-simplification's and the faces
    each left, the rows over 1.2x (issue 17's goal) marked. Ours runs with
    ``preserve_boundary=false``, the freedom fast-simplification takes (it moves and collapses
    boundary vertices; with the boundary kept a mesh with holes stops above the target)."""
    from tests.conftest import MESHES

    fns = tools(device, preserve_boundary=False)
    ours, lib = fns[f"tessera decimate ({device})"], fns.get("fast-simplification")
    if lib is None:
        raise SystemExit("fast-simplification is not installed (pip install -e '.[bench]')")
    print("| mesh | ratio | order | ours | faces | fast-simplification | faces | ours / theirs |")
    print("|---|---|---|---|---|---|---|---|")
    over, rows = 0, 0
    errors: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for path in sorted(MESHES.glob("*.obj")):
        mesh = bench_mesh(path, 1)
        V0 = np.asarray(mesh.V, dtype=np.float64)
        F0 = np.asarray(mesh.F, dtype=np.int64)
        for ratio in ratios:
            for order in range(orders):
                V, F = shuffled(V0, F0, order)
                cells: list[Any] = []
                for fn in (ours, lib):
                    got = isolated(fn, V, F, ratio)
                    if isinstance(got, str):
                        cells += [got, ""]
                    elif got[1].shape[0] == 0:
                        cells += ["no faces left", "0"]
                    else:
                        err = hausdorff(V, F, got[0], got[1], samples)["hausdorff"]
                        cells += [err, str(got[1].shape[0])]
                a, b = cells[0], cells[2]
                ratio_cell = ""
                if isinstance(a, float) and isinstance(b, float):
                    is_over, ratio_cell = versus(a, b)
                    rows += 1
                    over += is_over
                    errors.setdefault((path.name, ratio), []).append((a, b))
                text = [c if isinstance(c, str) else f"{c:.4f}" for c in cells]
                row = [path.name, f"{ratio:g}", str(order), *text, ratio_cell]
                print("| " + " | ".join(row) + " |", flush=True)
    print(f"\n{over} of {rows} rows over 1.2x")
    if orders > 1:  # each tool's median error over the orders: a noisy maximum less noisy
        print("\n| mesh | ratio | ours (median) | fast-simplification (median) | ours / theirs |")
        print("|---|---|---|---|---|")
        worse = 0
        for (name, ratio), pairs in errors.items():
            a, b = (float(np.median([p[i] for p in pairs])) for i in (0, 1))
            is_over, cell = versus(a, b)
            worse += is_over
            print(f"| {name} | {ratio:g} | {a:.4f} | {b:.4f} | {cell} |")
        print(f"\n{worse} of {len(errors)} meshes and ratios over 1.2x by the medians")


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.decimate_quality", description=__doc__)
    ap.add_argument("--mesh", default="", help="a shared mesh (default: the Stanford bunny)")
    ap.add_argument("--faces", default="1e6", help="subdivide to at least this many faces")
    ap.add_argument("--ratio", type=float, default=0.1)
    ap.add_argument("--samples", type=int, default=200_000)
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument(
        "--all",
        default="",
        metavar="RATIOS",
        help="instead: every shared mesh as it is at these ratios (e.g. 0.1,0.01), our error over "
        "fast-simplification's, each library call in a child process",
    )
    ap.add_argument(
        "--orders",
        type=int,
        default=1,
        help="with --all: each mesh in this many vertex orders (the file's, then shuffled)",
    )
    args = ap.parse_args()
    if args.all:
        sweep([float(r) for r in args.all.split(",")], args.samples, args.device, args.orders)
        return
    from tests.conftest import MESHES

    path = Path(args.mesh) if args.mesh else MESHES / "stanford-bunny.obj"
    mesh = bench_mesh(path, int(float(args.faces)))
    V = np.asarray(mesh.V, dtype=np.float64)
    F = np.asarray(mesh.F, dtype=np.int64)
    rows = []
    for name, fn in tools(args.device).items():
        t = time.perf_counter()
        try:
            V2, F2 = fn(V, F, args.ratio)
        except Exception as exc:  # a library refusing an input is a result, not a crash
            rows.append({"tool": name, "error": f"{exc.__class__.__name__}: {exc}"[:200]})
            print(json.dumps(rows[-1]), flush=True)
            continue
        dt = time.perf_counter() - t
        V2 = np.asarray(V2, dtype=np.float64)
        F2 = np.asarray(F2, dtype=np.int64)
        row = {"tool": name, "seconds": dt, "faces": int(F2.shape[0])}
        row.update(hausdorff(V, F, V2, F2, args.samples))
        rows.append(row)
        print(json.dumps(row), flush=True)
    report = {
        "mesh": path.name,
        "input_faces": int(F.shape[0]),
        "ratio": args.ratio,
        "samples": args.samples,
        "commit": os.environ.get("TESSERA_COMMIT", "unknown"),
        "rows": rows,
    }
    out = Path(os.environ.get("OUT", args.out))
    out.mkdir(parents=True, exist_ok=True)
    (out / "decimate_quality.json").write_text(json.dumps(report, indent=1))
    print(f"\n{path.name} at {F.shape[0]} faces -> ratio {args.ratio}\n")
    print("| tool | seconds | faces | Hausdorff / diag | mean / diag |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['tool']} | {r['error']} | | | |")
        else:
            print(
                f"| {r['tool']} | {r['seconds']:.2f} | {r['faces']} | {r['hausdorff']:.2e} | "
                f"{r['mean']:.2e} |"
            )


if __name__ == "__main__":
    main()
