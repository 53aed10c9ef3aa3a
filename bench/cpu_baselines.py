"""``python -m bench.cpu_baselines``: CPU libraries for the whole-mesh topology operations of
issue 6 (subdivide, dual_mesh, cluster_coarsen, repair, slice_plane) on the inputs ``python -m
bench`` uses, beside Tessera's NumPy twin of each, on this machine's CPU.

The offline GPU host lacks pymeshlab and Open3D, so its table has no library column for
Catmull-Clark, vertex clustering or slicing; this script fills it in on a machine that has them.
One run of everything (a library that fails is a result: its error is recorded). Two times per
library: the library call alone, and with the conversion from NumPy arrays into the library's mesh
(the way ``python -m bench`` times libraries). The twin runs with the mesh's topology already built
(as the GPU timings do); the build is its own row. Prints a Markdown table.

Needs pymeshlab, Open3D, libigl and trimesh (a missing one is left out); trimesh's slice
needs shapely, its capped slice also mapbox-earcut and, on long section loops, rtree.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.cases import SLICE_PLANE
from bench.meshes import bench_mesh
from workers.engine.mesh import TriMesh
from workers.engine.ops import OPS

#: what a library run returns: a short description of its output and the seconds of the library
#: call alone (conversion from and to arrays excluded)
LibRun = Callable[[np.ndarray, np.ndarray], tuple[str, float]]

#: the twin's cases, as in bench/cases.py (plus slice_plane above with a cap, trimesh's variant)
TWIN_CASES: list[tuple[str, dict[str, Any]]] = [
    ("subdivide", {"scheme": "catmull_clark"}),
    ("subdivide", {"scheme": "loop"}),
    ("subdivide", {"scheme": "midpoint"}),
    ("dual_mesh", {}),
    ("cluster_coarsen", {"cell_size": 0.01}),
    ("repair", {}),
    ("slice_plane", dict(SLICE_PLANE)),
    ("slice_plane", {**SLICE_PLANE, "cap": True}),
    ("slice_plane", {**SLICE_PLANE, "keep": "both", "cap": True}),
]


def label(op: str, params: dict[str, Any]) -> str:
    """The op's name as the issue-6 table writes it."""
    return op + ("" if not params else f"({','.join(map(str, params.values()))})")


def count(n: int) -> str:
    """An input size as the issue-6 table writes it."""
    return f"{n / 1e6:.1f}M" if n >= 100_000 else str(n)


def exact(n: int) -> str:
    """An output size, exactly (outputs of the same op are compared)."""
    return f"{n:,}"


def fmt_s(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x * 1e3:.2f} ms" if x < 10 else f"{x:.1f} s"


# --- pymeshlab ---------------------------------------------------------------------------------


def _pml_run(V: np.ndarray, F: np.ndarray, steps: list[tuple[str, dict[str, Any]]]) -> Any:
    import pymeshlab

    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(vertex_matrix=V, face_matrix=F.astype(np.int32)))
    t = time.perf_counter()
    for name, kw in steps:
        getattr(ms, name)(**kw)
    return ms, time.perf_counter() - t


def pml(*steps: tuple[str, dict[str, Any]]) -> LibRun:
    """pymeshlab filters applied in turn; the output is the current mesh."""

    def run(V: np.ndarray, F: np.ndarray) -> tuple[str, float]:
        ms, t = _pml_run(V, F, list(steps))
        m = ms.current_mesh()
        return f"{exact(m.face_number())} faces", t

    return run


def pml_section(split: bool) -> LibRun:
    """pymeshlab's planar section at the bench's plane (y = 0.1): the cut polyline, and with
    ``split`` also both halves and the section surface (a cap) as separate meshes."""
    point, normal = SLICE_PLANE["point"], SLICE_PLANE["normal"]
    assert normal == [0.0, 1.0, 0.0] and point[0] == point[2] == 0.0

    def run(V: np.ndarray, F: np.ndarray) -> tuple[str, float]:
        kw = {
            "planeaxis": "Y Axis",
            "planeoffset": float(point[1]),
            "relativeto": "Origin",
            "createsectionsurface": split,
            "splitsurfacewithsection": split,
        }
        ms, t = _pml_run(V, F, [("generate_polyline_from_planar_section", kw)])
        made = [ms.mesh(i) for i in range(1, ms.mesh_number())]
        edges = made[0].edge_number()
        faces = sum(m.face_number() for m in made[1:])
        return f"{edges} section edges" + (f", {exact(faces)} faces" if split else ""), t

    return run


def libs_pymeshlab() -> dict[str, list[tuple[str, LibRun]]]:
    try:
        import pymeshlab
    except ImportError:
        return {}
    every_edge = {"iterations": 1, "threshold": pymeshlab.PercentageValue(0.0)}
    return {
        "subdivide(catmull_clark)": [
            ("pymeshlab", pml(("meshing_surface_subdivision_catmull_clark", {"iterations": 1})))
        ],
        "subdivide(loop)": [("pymeshlab", pml(("meshing_surface_subdivision_loop", every_edge)))],
        "subdivide(midpoint)": [
            ("pymeshlab", pml(("meshing_surface_subdivision_midpoint", every_edge)))
        ],
        # threshold: the cell size as a percentage of the bounding-box diagonal
        "cluster_coarsen(0.01)": [
            (
                "pymeshlab",
                pml(("meshing_decimation_clustering", {"threshold": pymeshlab.PercentageValue(1)})),
            )
        ],
        "repair": [
            (
                "pymeshlab (duplicate + null faces, non-manifold edges and vertices split, "
                "orient coherently)",
                pml(
                    ("meshing_remove_duplicate_faces", {}),
                    ("meshing_remove_null_faces", {}),
                    ("meshing_repair_non_manifold_edges", {"method": "Split Vertices"}),
                    ("meshing_repair_non_manifold_vertices", {}),
                    ("meshing_re_orient_faces_coherently", {}),
                ),
            )
        ],
        label("slice_plane", SLICE_PLANE): [
            ("pymeshlab (section polyline only)", pml_section(False))
        ],
        label("slice_plane", {**SLICE_PLANE, "keep": "both", "cap": True}): [
            ("pymeshlab (section + split + section surface)", pml_section(True))
        ],
    }


# --- Open3D ------------------------------------------------------------------------------------


def libs_open3d() -> dict[str, list[tuple[str, LibRun]]]:
    try:
        import open3d as o3d
    except ImportError:
        return {}

    def o3d_run(fn: Callable[[Any, np.ndarray], Any]) -> LibRun:
        def run(V: np.ndarray, F: np.ndarray) -> tuple[str, float]:
            m = o3d.geometry.TriangleMesh(
                o3d.utility.Vector3dVector(V), o3d.utility.Vector3iVector(F.astype(np.int32))
            )
            t = time.perf_counter()
            out = fn(m, V)
            t = time.perf_counter() - t
            return f"{exact(len(out.triangles))} faces", t

        return run

    def clustering(m: Any, V: np.ndarray) -> Any:
        cell = 0.01 * float(np.linalg.norm(V.max(axis=0) - V.min(axis=0)))
        return m.simplify_vertex_clustering(cell, o3d.geometry.SimplificationContraction.Average)

    return {
        "subdivide(loop)": [("open3d", o3d_run(lambda m, V: m.subdivide_loop(1)))],
        "subdivide(midpoint)": [("open3d", o3d_run(lambda m, V: m.subdivide_midpoint(1)))],
        "cluster_coarsen(0.01)": [("open3d", o3d_run(clustering))],
    }


# --- trimesh and libigl (also timed on the GPU host: here they relate the two machines) ----------


def libs_trimesh_igl() -> dict[str, list[tuple[str, LibRun]]]:
    import trimesh
    import trimesh.remesh

    def tm_run(fn: Callable[[Any], Any]) -> LibRun:
        def run(V: np.ndarray, F: np.ndarray) -> tuple[str, float]:
            t = time.perf_counter()
            out = fn(trimesh.Trimesh(V, F, process=False))
            return f"{exact(len(out))} faces", time.perf_counter() - t

        return run

    def slice_tm(cap: bool) -> Callable[[Any], Any]:
        return lambda m: (
            trimesh.intersections.slice_mesh_plane(
                m, SLICE_PLANE["normal"], SLICE_PLANE["point"], cap=cap
            ).faces
        )

    def repair_tm(m: Any) -> Any:
        m.update_faces(m.unique_faces())
        m.update_faces(m.nondegenerate_faces())
        trimesh.repair.fix_normals(m)
        return m.faces

    out: dict[str, list[tuple[str, LibRun]]] = {
        "subdivide(loop)": [
            ("trimesh", tm_run(lambda m: trimesh.remesh.subdivide_loop(m.vertices, m.faces)[1]))
        ],
        "subdivide(midpoint)": [
            ("trimesh", tm_run(lambda m: trimesh.remesh.subdivide(m.vertices, m.faces)[1]))
        ],
        "repair": [("trimesh (no non-manifold splitting)", tm_run(repair_tm))],
        label("slice_plane", SLICE_PLANE): [("trimesh", tm_run(slice_tm(False)))],
        label("slice_plane", {**SLICE_PLANE, "cap": True}): [
            ("trimesh (cap)", tm_run(slice_tm(True)))
        ],
    }
    try:
        import igl
    except ImportError:
        return out

    def igl_run(fn: Callable[[np.ndarray, np.ndarray], Any]) -> LibRun:
        def run(V: np.ndarray, F: np.ndarray) -> tuple[str, float]:
            t = time.perf_counter()
            res = fn(V, F)
            return f"{exact(len(res[1]))} faces", time.perf_counter() - t

        return run

    out["subdivide(loop)"].append(("libigl", igl_run(igl.loop)))
    out["subdivide(midpoint)"].append(("libigl", igl_run(igl.upsample)))
    return out


def all_libs() -> dict[str, list[tuple[str, LibRun]]]:
    libs: dict[str, list[tuple[str, LibRun]]] = {}
    for part in (libs_pymeshlab(), libs_open3d(), libs_trimesh_igl()):
        for op, runs in part.items():
            libs.setdefault(op, []).extend(runs)
    return libs


#: operations no installed library offers, and why
NONE_OFFERS = {
    "dual_mesh": "no library here has a dual mesh (pymeshlab, Open3D, libigl, trimesh, "
    "gpytoolbox checked); pymeshlab's Doo-Sabin subdivision is a dual-based scheme, not the dual"
}


# --- the run -----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": model, "machine": platform.machine()}


def loadavg() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def versions() -> dict[str, str]:
    out = {}
    for name, mod in (
        ("pymeshlab", "pymeshlab"),
        ("open3d", "open3d"),
        ("trimesh", "trimesh"),
        ("libigl", "igl"),
        ("shapely", "shapely"),
    ):
        try:
            from importlib.metadata import version

            out[name] = version(name)
        except Exception:
            try:
                out[name] = getattr(__import__(mod), "__version__", "?")
            except ImportError:
                out[name] = "not installed"
    return out


def run_size(mesh: TriMesh, libs: dict[str, list[tuple[str, LibRun]]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    m = mesh.n_faces
    fresh = TriMesh(mesh.V, mesh.F)  # no topology cached
    t = time.perf_counter()
    _ = fresh.topology
    rows.append(
        {
            "op": "topology build",
            "faces": m,
            "impl": "Tessera NumPy twin",
            "call_s": time.perf_counter() - t,
            "total_s": None,
            "out": "",
        }
    )
    V = np.ascontiguousarray(mesh.V, dtype=np.float64)
    F = np.ascontiguousarray(mesh.F, dtype=np.int64)
    done_libs: set[str] = set()
    for op_name, raw in TWIN_CASES:
        op = OPS.get(op_name)
        params = op.parse_params(raw)
        lab = label(op_name, raw)
        t = time.perf_counter()
        res = op.numpy(fresh, params)
        t = time.perf_counter() - t
        rows.append(
            {
                "op": lab,
                "faces": m,
                "impl": "Tessera NumPy twin (topology built)",
                "call_s": t,
                "total_s": None,
                "out": f"{exact(res.mesh.n_faces)} faces",
            }
        )
        print(f"  {lab}: twin {fmt_s(t)}", flush=True)
        del res
        gc.collect()
        if lab in done_libs:
            continue
        done_libs.add(lab)
        if op_name in NONE_OFFERS:
            rows.append(
                {
                    "op": lab,
                    "faces": m,
                    "impl": "–",
                    "call_s": None,
                    "total_s": None,
                    "out": NONE_OFFERS[op_name],
                }
            )
        for name, fn in libs.get(lab, []):
            t0 = time.perf_counter()
            try:
                out, call = fn(V, F)
            except Exception as exc:  # a library refusing an input is a result, not a crash
                out, call = f"failed: {exc.__class__.__name__}: {str(exc)[:120]}", None
            total = time.perf_counter() - t0
            rows.append(
                {
                    "op": lab,
                    "faces": m,
                    "impl": name,
                    "call_s": call,
                    "total_s": total if call is not None else None,
                    "out": out,
                }
            )
            print(f"  {lab}: {name} {fmt_s(call)} ({out})", flush=True)
            gc.collect()
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| op | faces | implementation | call | with conversion | output |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['op']} | {count(r['faces'])} | {r['impl']} | {fmt_s(r['call_s'])} "
            f"| {fmt_s(r['total_s'])} | {r['out']} |"
        )
    return "\n".join(lines)


def main() -> None:
    from tests.conftest import MESHES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,4e6", help="least face counts, comma-separated")
    ap.add_argument("--mesh", default="stanford-bunny.obj", help="file in the meshes folder")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]

    info = machine()
    load_before = loadavg()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"{info['cpus']} CPUs, {info['cpu']} ({info['machine']}); load before: {load_before}")
    print("versions:", ", ".join(f"{k} {v}" for k, v in versions().items()), flush=True)
    libs = all_libs()
    rows: list[dict[str, Any]] = []
    for size in sizes:
        mesh = bench_mesh(MESHES / args.mesh, size)
        print(f"{args.mesh} at {mesh.n_faces} faces, {mesh.n_vertices} vertices", flush=True)
        rows += run_size(mesh, libs)
        del mesh
        gc.collect()
    load_after = loadavg()
    print()
    print(
        f"commit `{commit}`, {info['cpus']} CPUs ({info['cpu']}), load average (1, 5, 15 min) "
        f"before: {load_before}; after: {load_after}. One run each.\n"
    )
    print(markdown(rows))


if __name__ == "__main__":
    main()
