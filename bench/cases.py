"""What each benchmark measures: the operation, the bytes it must move at least, and the CPU
libraries that do the same thing (imported only when present)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Case:
    op: str
    params: dict[str, Any]
    #: fewest bytes through device memory: inputs read once, outputs written once (n: vertices,
    #: m: faces)
    floor_bytes: Callable[[int, int], int]
    libs: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = field(default_factory=dict)
    #: largest face count the NumPy twin and the libraries are timed at (they are slow)
    cpu_max_faces: int = 20_000_000
    #: largest face count the GPU implementation suits (a case above it is to be skipped)
    gpu_max_faces: int = 1_000_000_000


def _igl() -> Any:
    try:
        import igl
    except ImportError:
        return None
    return igl


def _trimesh(V: np.ndarray, F: np.ndarray) -> Any:
    import trimesh

    return trimesh.Trimesh(V, F, process=False)


def libs_vertex_normals() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.per_vertex_normals(
            V, F, igl.PER_VERTEX_NORMALS_WEIGHTING_TYPE_AREA
        )
    out["trimesh"] = lambda V, F: _trimesh(V, F).vertex_normals
    return out


def libs_face_normals() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.per_face_normals(V, F, np.array([0.0, 0.0, 1.0]))
    out["trimesh"] = lambda V, F: _trimesh(V, F).face_normals
    return out


def libs_gaussian_curvature() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.gaussian_curvature(V, F)
    out["trimesh"] = lambda V, F: _trimesh(V, F).vertex_defects
    return out


def libs_weld() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.remove_duplicate_vertices(V, F, 0.0)
    out["trimesh"] = lambda V, F: _trimesh(V, F).merge_vertices(merge_tex=True, merge_norm=True)
    return out


def libs_remove_unused() -> dict[str, Callable[..., Any]]:
    igl = _igl()
    return {"libigl": lambda V, F: igl.remove_unreferenced(V, F)} if igl is not None else {}


def libs_stats() -> dict[str, Callable[..., Any]]:
    def tm(V: np.ndarray, F: np.ndarray) -> Any:
        m = _trimesh(V, F)
        return (
            m.euler_number,
            m.is_watertight,
            m.is_winding_consistent,
            m.body_count,
            m.area,
            len(m.edges_unique),
        )

    return {"trimesh": tm}


def libs_face_areas() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.doublearea(V, F) / 2.0
    out["trimesh"] = lambda V, F: _trimesh(V, F).area_faces
    return out


def libs_edge_lengths() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.edge_lengths(V, F)
    out["trimesh"] = lambda V, F: _trimesh(V, F).edges_unique_length
    return out


def libs_mean_curvature() -> dict[str, Callable[..., Any]]:
    """libigl's cotangent matrix and Voronoi mass give the same operator (Meyer et al.)."""
    igl = _igl()
    if igl is None:
        return {}

    def cot(V: np.ndarray, F: np.ndarray) -> Any:
        K = igl.cotmatrix(V, F) @ V
        M = igl.massmatrix(V, F, igl.MASSMATRIX_TYPE_VORONOI).diagonal()
        return 0.5 * np.linalg.norm(K / M[:, None], axis=1)

    return {"libigl": cot}


def libs_principal_curvatures() -> dict[str, Callable[..., Any]]:
    """libigl's quadric fitting on the 2-ring (Panozzo et al. 2010): the same quantities by
    another method."""
    igl = _igl()
    if igl is None:
        return {}
    return {"libigl": lambda V, F: igl.principal_curvature(V, F, radius=2)}


def libs_laplacian_smooth() -> dict[str, Callable[..., Any]]:
    import trimesh.smoothing

    return {
        "trimesh": lambda V, F: trimesh.smoothing.filter_laplacian(
            _trimesh(V, F), lamb=0.5, iterations=10, volume_constraint=False
        )
    }


def libs_taubin_smooth() -> dict[str, Callable[..., Any]]:
    import trimesh.smoothing

    mu = 1.0 / (0.1 - 1.0 / 0.5)  # the op's default pass band 0.1 with lambda 0.5
    return {
        "trimesh": lambda V, F: trimesh.smoothing.filter_taubin(
            _trimesh(V, F), lamb=0.5, nu=-mu, iterations=10
        )
    }


def libs_geodesic_distance() -> dict[str, Callable[..., Any]]:
    """Heat-method solvers with their factorization included (one source, as the case)."""
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:

        def heat(V: np.ndarray, F: np.ndarray) -> Any:
            data = igl.HeatGeodesicsData()
            igl.heat_geodesics_precompute(V, F, data)
            return igl.heat_geodesics_solve(data, np.array([0], dtype=np.int64))

        out["libigl"] = heat
    try:
        import potpourri3d
    except ImportError:
        return out
    out["potpourri3d"] = lambda V, F: potpourri3d.MeshHeatMethodDistanceSolver(
        V, F, t_coef=1.0, use_robust=False
    ).compute_distance(0)
    return out


def libs_subdivide_loop() -> dict[str, Callable[..., Any]]:
    import trimesh.remesh

    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.loop(V, F)
    out["trimesh"] = lambda V, F: trimesh.remesh.subdivide_loop(V, F, iterations=1)
    return out


def libs_subdivide_midpoint() -> dict[str, Callable[..., Any]]:
    import trimesh.remesh

    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.upsample(V, F)
    out["trimesh"] = lambda V, F: trimesh.remesh.subdivide(V, F)
    return out


def libs_cluster_coarsen() -> dict[str, Callable[..., Any]]:
    """Open3D's vertex clustering (cell: 1 % of the bounding-box diagonal, as the case's
    parameters), where installed."""
    try:
        import open3d as o3d
    except ImportError:
        return {}

    def run(V: np.ndarray, F: np.ndarray) -> Any:
        m = o3d.geometry.TriangleMesh(o3d.utility.Vector3dVector(V), o3d.utility.Vector3iVector(F))
        cell = 0.01 * float(np.linalg.norm(V.max(axis=0) - V.min(axis=0)))
        return m.simplify_vertex_clustering(cell, o3d.geometry.SimplificationContraction.Average)

    return {"open3d": run}


def libs_repair() -> dict[str, Callable[..., Any]]:
    """trimesh's cleanup: duplicate and degenerate faces dropped, winding and normals fixed (it
    does not split non-manifold edges or vertices)."""

    def tm(V: np.ndarray, F: np.ndarray) -> Any:
        import trimesh

        t = _trimesh(V, F)
        t.update_faces(t.unique_faces())
        t.update_faces(t.nondegenerate_faces())
        trimesh.repair.fix_normals(t)
        return t.faces

    return {"trimesh": tm}


#: the plane the slice case cuts the benchmark mesh (the Stanford bunny, y up) with
SLICE_PLANE = {"point": [0.0, 0.1, 0.0], "normal": [0.0, 1.0, 0.0]}


def libs_slice_plane() -> dict[str, Callable[..., Any]]:
    """trimesh's slice_mesh_plane (it imports shapely: only when that is installed)."""
    try:
        import shapely  # noqa: F401
    except ImportError:
        return {}

    def tm(V: np.ndarray, F: np.ndarray) -> Any:
        import trimesh

        return trimesh.intersections.slice_mesh_plane(
            _trimesh(V, F), SLICE_PLANE["normal"], SLICE_PLANE["point"]
        ).faces

    def tm_cap(V: np.ndarray, F: np.ndarray) -> Any:
        import trimesh

        return trimesh.intersections.slice_mesh_plane(
            _trimesh(V, F), SLICE_PLANE["normal"], SLICE_PLANE["point"], cap=True
        ).faces

    return {"trimesh": tm, "trimesh(cap)": tm_cap}


#: the marching-cubes case: the KEY-WELD paper's spherical-distance volume C (256^3)
MC_RESOLUTION = 256


def libs_marching_cubes() -> dict[str, Callable[..., Any]]:
    """scikit-image's Lewiner marching cubes on the same volume (the mesh argument is ignored:
    the op is a source step); only when scikit-image is installed."""
    try:
        from skimage import measure
    except ImportError:
        return {}

    def sk(V: np.ndarray, F: np.ndarray) -> Any:
        from workers.engine.marching_cubes import sphere_distance

        S, _, h = sphere_distance(np, MC_RESOLUTION, (0.0, 0.0, 0.0))
        return measure.marching_cubes(S, 0.98, spacing=h)

    return {"scikit-image": sk}


def libs_decimate(ratio: float) -> dict[str, Callable[..., Any]]:
    """QEM decimators to the same face count, where installed (the ``bench`` extra):
    fast-simplification and pyfqmr (both Fast-Quadric-Mesh-Simplification), meshoptimizer."""
    out: dict[str, Callable[..., Any]] = {}
    try:
        import fast_simplification
    except ImportError:
        pass
    else:
        out["fast-simplification"] = lambda V, F: fast_simplification.simplify(
            V.astype(np.float32), F.astype(np.int32), target_reduction=1.0 - ratio
        )
    try:
        import pyfqmr
    except ImportError:
        pass
    else:

        def fqmr(V: np.ndarray, F: np.ndarray) -> Any:
            s = pyfqmr.Simplify()
            s.setMesh(V, F)
            s.simplify_mesh(target_count=int(ratio * F.shape[0]), aggressiveness=7, verbose=False)
            return s.getMesh()

        out["pyfqmr"] = fqmr
    try:
        import meshoptimizer
    except ImportError:
        pass
    else:

        def meshopt(V: np.ndarray, F: np.ndarray) -> Any:
            idx = F.astype(np.uint32).ravel()
            dst = np.zeros_like(idx)
            return meshoptimizer.simplify(
                dst,
                idx,
                np.ascontiguousarray(V, dtype=np.float32),
                target_index_count=3 * int(ratio * F.shape[0]),
                target_error=1.0,
            )

        out["meshoptimizer"] = meshopt
    return out


V12, F12, N12 = 12, 12, 12


def cases() -> list[Case]:
    return [
        Case("face_normals", {}, lambda n, m: V12 * n + F12 * m + N12 * m, libs_face_normals()),
        Case(
            "vertex_normals",
            {"weighting": "area"},
            lambda n, m: V12 * n + F12 * m + N12 * n,
            libs_vertex_normals(),
        ),
        Case(
            "vertex_normals", {"weighting": "angle"}, lambda n, m: V12 * n + F12 * m + N12 * n, {}
        ),
        Case(
            "gaussian_curvature",
            {},
            lambda n, m: V12 * n + F12 * m + 4 * n + 2 * n,
            libs_gaussian_curvature(),
        ),
        Case("weld", {}, lambda n, m: V12 * n + F12 * m + V12 * n + F12 * m, libs_weld()),
        Case(
            "remove_unused_vertices",
            {},
            lambda n, m: V12 * n + 2 * F12 * m + V12 * n,
            libs_remove_unused(),
        ),
        Case("remove_degenerate_faces", {}, lambda n, m: V12 * n + 2 * F12 * m, {}),
        Case("stats", {}, lambda n, m: V12 * n + F12 * m, libs_stats(), cpu_max_faces=5_000_000),
        Case("face_areas", {}, lambda n, m: V12 * n + F12 * m + 4 * m, libs_face_areas()),
        # sides (12 m) and, for the report, the unique edges' EV and float64 lengths (3m/2 each)
        Case(
            "edge_lengths",
            {},
            lambda n, m: V12 * n + F12 * m + 12 * m + (8 + 8) * (3 * m // 2),
            libs_edge_lengths(),
        ),
        Case("face_quality", {}, lambda n, m: V12 * n + F12 * m + 8 * m + 4 * m, {}),
        Case("mean_curvature", {}, lambda n, m: V12 * n + F12 * m + 4 * n, libs_mean_curvature()),
        # k1, k2 (4 n each) and the two directions (12 n each)
        Case(
            "principal_curvatures",
            {},
            lambda n, m: V12 * n + F12 * m + 32 * n,
            libs_principal_curvatures(),
            cpu_max_faces=2_000_000,
        ),
        # ten steps, each reading and writing every position at least once (in float64: 24 n)
        Case(
            "laplacian_smooth",
            {"iterations": 10},
            lambda n, m: V12 * n + 2 * 24 * n * 10 + (8 * 3 * m // 2) * 10 + V12 * n,
            libs_laplacian_smooth(),
            cpu_max_faces=5_000_000,
        ),
        Case(
            "laplacian_smooth",
            {"weights": "cotangent", "iterations": 10},
            lambda n, m: V12 * n + (2 * 24 * n + F12 * m + 12 * m) * 10 + V12 * n,
            {},
            cpu_max_faces=5_000_000,
        ),
        Case(
            "taubin_smooth",
            {"iterations": 10},
            lambda n, m: V12 * n + 2 * 24 * n * 20 + (8 * 3 * m // 2) * 20 + V12 * n,
            libs_taubin_smooth(),
            cpu_max_faces=5_000_000,
        ),
        # faces read, sorted keys for duplicates, corners (fans), flips written: ~ a few passes
        Case(
            "repair",
            {},
            lambda n, m: V12 * n + F12 * m + 3 * 8 * 3 * m + F12 * m + V12 * n,
            libs_repair(),
            cpu_max_faces=5_000_000,
        ),
        # positions and faces in, distances, and the kept half out
        Case(
            "slice_plane",
            dict(SLICE_PLANE),
            lambda n, m: V12 * n + F12 * m + 8 * n + (V12 * n + F12 * m) // 2,
            libs_slice_plane(),
        ),
        Case(
            "slice_plane",
            {**SLICE_PLANE, "keep": "both", "cap": True},
            lambda n, m: V12 * n + F12 * m + 8 * n + V12 * n + F12 * m,
            {},
        ),
        # the field written and read once (float64); the surface is small beside it
        Case(
            "marching_cubes",
            {"field": {"resolution": MC_RESOLUTION}, "isovalue": 0.98},
            lambda n, m: 2 * 8 * MC_RESOLUTION**3,
            libs_marching_cubes(),
        ),
        Case(
            "marching_cubes",
            {"field": {"resolution": MC_RESOLUTION}, "isovalue": 0.98, "k": 1.0},
            lambda n, m: 2 * 8 * MC_RESOLUTION**3,
            {},
        ),
        # one step: positions and normals in, positions out; the neighbourhoods are not counted
        Case(
            "bilateral_denoise",
            {},
            lambda n, m: V12 * n + F12 * m + 24 * n + V12 * n,
            {},
            cpu_max_faces=5_000_000,
        ),
        # one level: V and F in; n + 3m/2 vertices and 4m faces out (16M faces in: 64M out)
        Case(
            "subdivide",
            {"scheme": "loop"},
            lambda n, m: V12 * n + F12 * m + V12 * (n + 3 * m // 2) + 4 * F12 * m,
            libs_subdivide_loop(),
            cpu_max_faces=5_000_000,
            gpu_max_faces=17_000_000,
        ),
        Case(
            "subdivide",
            {"scheme": "midpoint"},
            lambda n, m: V12 * n + F12 * m + V12 * (n + 3 * m // 2) + 4 * F12 * m,
            libs_subdivide_midpoint(),
            cpu_max_faces=5_000_000,
            gpu_max_faces=17_000_000,
        ),
        # 3m quads as 6m triangles on n + m + 3m/2 vertices
        Case(
            "subdivide",
            {"scheme": "catmull_clark"},
            lambda n, m: V12 * n + F12 * m + V12 * (n + 5 * m // 2) + 6 * F12 * m + 4 * 6 * m,
            {},
            cpu_max_faces=5_000_000,
            gpu_max_faces=17_000_000,
        ),
        # m centroids and n polygon centres out, one triangle per polygon side (3m)
        Case(
            "dual_mesh",
            {},
            lambda n, m: V12 * n + F12 * m + V12 * (m + n) + 3 * F12 * m + 4 * 3 * m,
            {},
            cpu_max_faces=5_000_000,
        ),
        # V and F in, then the (much smaller) coarse mesh: counted as nothing
        Case(
            "cluster_coarsen",
            {"cell_size": 0.01},
            lambda n, m: V12 * n + F12 * m,
            libs_cluster_coarsen(),
            cpu_max_faces=5_000_000,
        ),
        # V and F in, a tenth of them out; the rounds' topology rebuilds are not counted
        Case(
            "decimate",
            {"target_ratio": 0.1},
            lambda n, m: (V12 * n + F12 * m) * 11 // 10,
            libs_decimate(0.1),
            cpu_max_faces=1_200_000,
        ),
    ]


def size_limited_cases() -> list[Case]:
    """Cases that must not run at the default benchmark sizes: ``python -m bench`` times every
    case at every size on the GPU, so these join :func:`cases` once it skips a case above its
    ``gpu_max_faces``. ``average_attribute`` has no case: the benchmark meshes carry no
    attribute to average, and a case runs one op on a bare mesh."""
    return [
        # the heat system is solved by SuperLU (see the op's docstring): a million faces at most;
        # the default method (propagation) at every size: python -m bench.geodesics
        Case(
            "geodesic_distance",
            {"sources": [0], "method": "heat"},
            lambda n, m: V12 * n + F12 * m + 4 * n,
            libs_geodesic_distance(),
            cpu_max_faces=1_200_000,
            gpu_max_faces=1_200_000,
        ),
    ]
