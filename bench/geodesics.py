"""``python -m bench.geodesics``: how accurate and how fast ``geodesic_distance`` is.

``--accuracy`` (any host, CPU): every method on every shared mesh (welded exactly, as the tests do)
against libigl's exact polyhedral geodesics (``igl.exact_geodesic``, Mitchell–Mount–Papadimitriou),
from one source and from eight (seeded). Relative error ``|d - d*| / d*`` over the vertices that
reach a source and are not one (``d* > 0``): its mean and its maximum, and the maximum over the
vertices at least five mean edge lengths ``h`` from every source (a first-order method errs by a
fraction of an edge length, which near a source is a large fraction of the distance).
Meshes left out, with the reason printed: fewer than 100 vertices, and meshes with non-manifold
edges, on which libigl's exact geodesic aborts the process. ``--sources 1,4,8 --seed 1`` picks
other source sets; ``--default-only`` measures the default method alone (the heat solves are
most of the time).

``--sizes 1e6,4e6,16e6`` (the GPU host; CPU when no GPU): the Stanford bunny welded and
midpoint-subdivided to at least each face count, as ``python -m bench`` makes its inputs. Each
method is timed on the current backend (median of ``--repeat`` after one warm-up, synchronized).
The error is exact and cheap at any size: midpoint subdivision leaves the surface as it was and
keeps the original vertices first, so the exact distances at those vertices are libigl's on the
welded bunny (35k vertices), from an original vertex; the table gives the mean and max relative
error over those vertices. A method that fails on a size (the heat method's host solve past
``--heat-max-faces``, or its heat underflowing) is printed as such. Fails loudly (non-zero exit)
when a method returns something that is not a distance (NaN, negative, not 0 at the source).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.meshes import bench_mesh
from workers.engine import EngineError
from workers.engine.mesh import TriMesh
from workers.engine.reindex import weld

ROOT = Path(__file__).resolve().parent.parent
MESHES = Path(os.environ.get("TESSERA_MESHES", ROOT.parent / "shared" / "meshes"))

#: the methods compared: label -> the op's parameters besides the sources
METHODS: dict[str, dict[str, Any]] = {
    "propagation (default)": {"method": "propagation"},
    "heat, time_factor 1": {"method": "heat"},
    "heat, time_factor 4": {"method": "heat", "time_factor": 4.0},
}
#: the methods timed at scale (time_factor 4 costs what time_factor 1 does)
SCALE_METHODS = {k: METHODS[k] for k in ("propagation (default)", "heat, time_factor 1")}
#: vertices this many mean edge lengths from every source make the "far" maximum
FAR = 5.0


def sources_for(n: int, k: int, seed: int = 2013) -> list[int]:
    return [int(s) for s in np.sort(np.random.default_rng(seed).choice(n, k, replace=False))]


def exact(V: np.ndarray, F: np.ndarray, sources: list[int]) -> np.ndarray:
    import igl

    return igl.exact_geodesic(
        V, F, VS=np.asarray(sources, dtype=np.int64), VT=np.arange(V.shape[0], dtype=np.int64)
    )


def mean_edge(mesh: TriMesh) -> float:
    V = np.asarray(mesh.V, dtype=np.float64)
    EV = np.asarray(mesh.topology.EV)
    return float(np.linalg.norm(V[EV[:, 0]] - V[EV[:, 1]], axis=1).mean())


def relative_errors(d: np.ndarray, ref: np.ndarray, h: float) -> tuple[float, float, float]:
    """(mean, max, max at ``ref >= FAR * h``) of ``|d - ref| / ref`` where ``ref > 0`` is finite."""
    ok = np.isfinite(ref) & (ref > 0)
    if not np.isfinite(d[ok]).all():
        raise SystemExit("a reachable vertex got no finite distance")
    rel = np.abs(d[ok] - ref[ok]) / ref[ok]
    far = ref[ok] >= FAR * h
    return float(rel.mean()), float(rel.max()), float(rel[far].max()) if far.any() else 0.0


def distance(mesh: TriMesh, sources: list[int], params: dict[str, Any], device: str) -> Any:
    res = mesh.run([("geodesic_distance", {"sources": sources, **params})], device=device)
    d = res.mesh.vertex_attrs["geodesic_distance"]
    return d.get() if hasattr(d, "get") else np.asarray(d)


def check(d: np.ndarray, sources: list[int], label: str) -> str:
    """Fails loudly on NaN or a source not at 0; negative values (the heat method's Poisson step
    can dip below 0 next to a source) are a result, returned as a note."""
    if np.isnan(d).any() or (d[sources] != 0).any():
        raise SystemExit(f"{label}: not a distance (NaN, or not 0 at a source)")
    neg = int((d < 0).sum())
    return f"{neg} negative" if neg else ""


def graph_distance(mesh: TriMesh, sources: list[int]) -> np.ndarray:
    """Shortest edge paths: an upper bound of the exact geodesic distance."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    V = np.asarray(mesh.V, dtype=np.float64)
    EV = np.asarray(mesh.topology.EV)
    w = np.linalg.norm(V[EV[:, 0]] - V[EV[:, 1]], axis=1)
    G = coo_matrix((w, (EV[:, 0], EV[:, 1])), shape=(mesh.n_vertices,) * 2)
    return dijkstra(G, directed=False, indices=sources, min_only=True)


# ------------------------------------------------------------------------------ accuracy
def accuracy_rows(
    name: str, counts: list[int], seed: int = 2013, methods: dict[str, Any] = METHODS
) -> list[dict[str, Any]]:
    mesh, _ = weld(TriMesh.load(MESHES / name))
    V = np.asarray(mesh.V, dtype=np.float64)
    F = np.asarray(mesh.F, dtype=np.int64)
    h = mean_edge(mesh)
    rows = []
    for k in counts:
        src = sources_for(mesh.n_vertices, k, seed)
        t = time.perf_counter()
        ref = exact(V, F, src)
        t_exact = time.perf_counter() - t
        row: dict[str, Any] = {"mesh": name, "n": mesh.n_vertices, "k": k, "exact_s": t_exact}
        wrong = int((ref > graph_distance(mesh, src) * (1 + 1e-6) + 1e-12).sum())
        if wrong:  # libigl's answer is longer than an edge path: not the exact distance
            for label in methods:
                row[label] = f"no reference: libigl's exact exceeds edge paths at {wrong} vertices"
            rows.append(row)
            continue
        for label, params in methods.items():
            try:
                d = distance(mesh, src, params, "cpu").astype(np.float64)
            except EngineError as exc:
                row[label] = f"refused: {exc.code}"
                continue
            note = check(d, src, f"{name} {label}")
            row[label] = (*relative_errors(d, ref, h), note)
        rows.append(row)
    return rows


def accuracy(counts: list[int], seed: int = 2013, default_only: bool = False) -> None:
    import json

    names = sorted(p.name for p in MESHES.glob("*.obj"))
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for name in names:
        mesh, _ = weld(TriMesh.load(MESHES / name))
        if mesh.n_vertices < 100:
            skipped.append(f"{name}: {mesh.n_vertices} vertices (too few to measure an error)")
            continue
        # libigl's exact geodesic aborts the process on non-manifold edges: run each mesh in
        # its own interpreter and say so when it dies
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.geodesics",
                "--accuracy-one",
                name,
                "--sources",
                ",".join(map(str, counts)),
                "--seed",
                str(seed),
                *(["--default-only"] if default_only else []),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        if out.returncode != 0:
            why = (out.stderr.strip().splitlines() or ["no message"])[-1]
            if out.returncode > 0:
                raise SystemExit(f"{name}: {why}")
            skipped.append(
                f"{name}: libigl's exact_geodesic killed the process (signal "
                f"{-out.returncode}; the mesh has non-manifold edges)"
            )
            continue
        rows += json.loads(out.stdout.strip().splitlines()[-1])
    labels = list(METHODS)[:1] if default_only else list(METHODS)
    head = (
        "| mesh | vertices | sources | "
        + " | ".join(f"{m}: mean / max / max at d* >= {FAR:g} h" for m in labels)
        + " |"
    )
    print(head)
    print("|" + "---|" * (3 + len(labels)))
    for r in rows:
        cells = []
        for m in labels:
            v = r[m]
            if isinstance(v, str):
                cells.append(v)
            else:
                text = " / ".join(f"{100 * x:.2f} %" for x in v[:3])
                cells.append(text + (f" ({v[3]})" if v[3] else ""))
        print(f"| {r['mesh']} | {r['n']} | {r['k']} | " + " | ".join(cells) + " |")
    for m in labels:
        vals = [r[m] for r in rows if not isinstance(r[m], str)]
        if vals:
            print(
                f"\n{m}: worst mean {100 * max(v[0] for v in vals):.2f} %, worst max "
                f"{100 * max(v[1] for v in vals):.2f} %, worst max at d* >= {FAR:g} h "
                f"{100 * max(v[2] for v in vals):.2f} %"
            )
    for s in skipped:
        print(f"\nleft out: {s}")


# ------------------------------------------------------------------------------ scale
def _sync() -> None:
    try:
        import cupy

        cupy.cuda.Device().synchronize()
    except Exception:
        pass


def timed(fn: Any, repeat: int) -> tuple[float, Any, int]:
    """Median seconds of ``repeat`` runs after a warm-up (kernels compiled, topology and patches
    cached), and the runs timed: one only when the warm-up took over 5 s (the 3-minute budget)."""
    t = time.perf_counter()
    out = fn()
    _sync()
    if time.perf_counter() - t > 5.0:
        repeat = 1
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        _sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out, repeat


def scale(sizes: list[float], repeat: int, heat_max_faces: float, base: str) -> None:
    from workers.engine.backend import gpu_available

    device = "gpu" if gpu_available() else "cpu"
    backend = "cupy" if device == "gpu" else "numpy"
    path = MESHES / base
    coarse, _ = weld(TriMesh.load(path))
    Vc = np.asarray(coarse.V, dtype=np.float64)
    Fc = np.asarray(coarse.F, dtype=np.int64)
    src = [int(coarse.n_vertices // 3)]
    t = time.perf_counter()
    ref = exact(Vc, Fc, src)
    print(
        f"reference: igl.exact_geodesic on {base} welded ({coarse.n_vertices} vertices), "
        f"source {src[0]}, {time.perf_counter() - t:.1f} s",
        flush=True,
    )
    print(f"device: {device}")
    print("\n| faces | vertices | method | time (s) | mean rel. error | max rel. error | note |")
    print("|---|---|---|---|---|---|---|")
    for size in sizes:
        mesh = bench_mesh(path, int(size), backend=backend)
        h = mean_edge(mesh.to("numpy"))
        for label, params in SCALE_METHODS.items():
            if params["method"] == "heat" and mesh.n_faces > heat_max_faces:
                print(
                    f"| {mesh.n_faces} | {mesh.n_vertices} | {label} | - | - | - | not run: "
                    f"the heat step is solved on the host (SuperLU), past "
                    f"--heat-max-faces {heat_max_faces:g} |",
                    flush=True,
                )
                continue
            try:
                sec, d, runs = timed(lambda p=params, m=mesh: distance(m, src, p, device), repeat)
            except EngineError as exc:
                print(
                    f"| {mesh.n_faces} | {mesh.n_vertices} | {label} | - | - | - | refused: "
                    f"{exc.code} |",
                    flush=True,
                )
                continue
            d = np.asarray(d, dtype=np.float64)
            note = check(d, src, f"{mesh.n_faces} faces {label}")
            note = "; ".join(x for x in (note, f"median of {runs}") if x)
            mean, mx, _ = relative_errors(d[: coarse.n_vertices], ref, h)
            print(
                f"| {mesh.n_faces} | {mesh.n_vertices} | {label} | {sec:.3f} | "
                f"{100 * mean:.3f} % | {100 * mx:.2f} % | {note} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--accuracy", action="store_true", help="the CPU accuracy table")
    ap.add_argument("--accuracy-one", help=argparse.SUPPRESS)
    ap.add_argument("--sources", default="1,8", help="source counts for --accuracy")
    ap.add_argument("--seed", type=int, default=2013, help="seed of the sources for --accuracy")
    ap.add_argument(
        "--default-only", action="store_true", help="--accuracy of the default method alone"
    )
    ap.add_argument("--sizes", default="1e6,4e6,16e6", help="face counts for the scale table")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--heat-max-faces", type=float, default=1.2e6)
    ap.add_argument("--mesh", default="stanford-bunny.obj", help="base mesh for --sizes")
    a = ap.parse_args()
    counts = [int(x) for x in a.sources.split(",")]
    if a.accuracy_one:
        import json

        methods = dict(list(METHODS.items())[:1]) if a.default_only else METHODS
        print(json.dumps(accuracy_rows(a.accuracy_one, counts, a.seed, methods)))
    elif a.accuracy:
        accuracy(counts, a.seed, a.default_only)
    else:
        scale([float(x) for x in a.sizes.split(",")], a.repeat, a.heat_max_faces, a.mesh)


if __name__ == "__main__":
    main()
