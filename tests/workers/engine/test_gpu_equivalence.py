"""Every GPU implementation against its NumPy twin, on every shared mesh and on adversarial ones.

Runs only where CuPy sees a GPU (``TESSERA_REQUIRE_GPU=1`` makes a missing GPU a failure). Two
results agree when both raise the same error class and code, or when positions and faces are equal
(exactly for re-indexing), attributes are close within the tolerance stated per attribute, and
reports agree (integers exactly, floats to 1e-5 relative).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.conftest import all_meshes
from tests.workers.engine import shapes
from workers.engine import EngineError, TriMesh
from workers.engine.artifacts import to_scipy
from workers.engine.backend import to_numpy
from workers.engine.geometry import corner_angles64, face_cross64, scatter_rows, unitize
from workers.engine.ops import OPS
from workers.engine.ops.registry import OpKind

pytestmark = pytest.mark.gpu

#: parameter sets per operation (each must be valid for the op's model)
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "weld": [{}, {"tolerance": 1e-3, "relative": True}, {"remove_unused": False}],
    "remove_unused_vertices": [{}],
    "remove_degenerate_faces": [{}, {"geometric": False}],
    "stats": [{}],
    "face_normals": [{}],
    "vertex_normals": [{"weighting": w} for w in ("area", "angle", "uniform", "max")],
    "gaussian_curvature": [{}, {"per_area": True}],
    "face_areas": [{}],
    "edge_lengths": [{}],
    "face_quality": [{}],
    "mean_curvature": [{}],
    "laplacian_smooth": [
        {},
        {"weights": "cotangent", "iterations": 5},
        {"fix_boundary": False, "iterations": 3, "lambda": 1.0},
    ],
    "taubin_smooth": [{}, {"weights": "cotangent", "iterations": 3, "fix_boundary": False}],
    # only suzanne.obj carries vertex normals; elsewhere both raise op.unknown_attribute (the
    # op's own GPU test averages attributes it attaches)
    "average_attribute": [
        {"attribute": "vertex_normals"},
        {"attribute": "vertex_normals", "include_self": True, "iterations": 3, "output": "n"},
    ],
    # max_rings=1 runs the one-ring kernel (patched or global): its sums run in another order
    # than the twin's, so after the first step a neighbour exactly on the ball's rim may fall on
    # either side; one step compares exactly (test_queries checks the one-ring step too)
    "bilateral_denoise": [{}, {"iterations": 2}, {"max_rings": 1, "fix_boundary": True}],
    "geodesic_distance": [
        {"sources": [0]},  # the default: propagation
        {"sources": [0], "method": "heat"},
        {"sources": [0, 2], "method": "heat", "time_factor": 4.0},
        {"sources": [0, 2]},  # two sources: both fronts kept per vertex
    ],
    "soup_to_mesh": [{}],
    "merge": [{}, {"weld": False, "keep_parts": True}],
    "submesh": [{}, {"select": "component", "component": 0}],
    "laplacian_matrix": [{}, {"weights": "uniform", "mass": "mixed"}],
    "subdivide": [
        {},
        {"scheme": "midpoint", "levels": 2},
        {"scheme": "catmull_clark"},
        {"scheme": "loop", "levels": 2},
    ],
    "dual_mesh": [{}, {"triangulation": "fan"}],
    "cluster_coarsen": [
        {},
        {"cell_size": 0.05, "remove_non_manifold": True},
        {"cell_size": 0.02, "relative": False},
    ],
    "slice_plane": [
        {},
        {"keep": "both", "cap": True, "normal": [0.3, 1.0, -0.2], "point": [0.1, 0.2, 0.05]},
        {"keep": "below", "snap": False, "point": [0.1, 0.2, 0.3], "cap": True},
    ],
    # a source step: the input mesh is ignored (every mesh runs the same volume; kept small)
    "marching_cubes": [
        {"field": {"resolution": 24}},
        {"field": {"resolution": 40, "center": [0.1, 0.0, -0.05]}, "isovalue": 0.7, "k": 1.0},
        {"field": {"resolution": 20}, "isovalue": 1.2, "dtype": "float64"},
    ],
    "repair": [{}, {"outward": False, "geometric": True, "remove_duplicates": False}],
    "delaunay_flip": [{}, {"feature_angle": 180.0, "max_rounds": 3}],
    "isotropic_remesh": [{"iterations": 2}, {"target_edge_length": 2.0, "relaxation": "uniform"}],
    "collapse_short_edges": [
        {},
        {"threshold": 0.9, "preserve_boundary": False},
        {"threshold": 1.2, "max_edge_length": 2.0},
    ],
    "decimate": [
        {},
        {"target_ratio": 0.1, "preserve_boundary": False},
        {"target_faces": 500, "max_error": 0.01},
    ],
}

#: dynamic operations: parallel rounds may pick other (equally valid) cavities on each backend
#: when float rounding reorders priorities, so the results are compared by their invariants and
#: quality figures (DESIGN.md, "CPU twin"), not bit for bit
DYNAMIC = {"delaunay_flip", "isotropic_remesh", "collapse_short_edges", "decimate"}

#: absolute tolerance per attribute; float32 kernels against the float64 twin
ATOL = {
    "face_normals": 1e-5,
    "vertex_normals": 2e-4,
    "gaussian_curvature": 2e-4,
    "face_areas": 1e-6,
    "edge_lengths": 1e-6,
    "face_quality": 1e-6,
    "mean_curvature": 1e-5,
    "geodesic_distance": 1e-4,
}
RTOL = {
    "gaussian_curvature": 1e-4,
    "face_areas": 1e-6,
    "edge_lengths": 1e-6,
    "mean_curvature": 1e-5,
    "geodesic_distance": 1e-4,
}


def adversarial() -> dict[str, TriMesh]:
    rng = np.random.default_rng(7)
    bunny = shapes.load("stanford-bunny.obj")
    tri = shapes.mesh([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 2)])
    degenerate = shapes.mesh(
        [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0)], [(0, 1, 2), (0, 1, 3), (1, 1, 3)]
    )
    isolated = shapes.mesh(np.vstack([shapes.cube().V, rng.normal(size=(5, 3))]), shapes.cube().F)
    V = rng.normal(size=(500, 3))
    F = rng.integers(0, 500, size=(2000, 3))
    return {
        "soup(bunny)": shapes.soup(bunny),
        "one_triangle": tri,
        "degenerate": degenerate,
        "isolated_vertices": isolated,
        "bowtie": shapes.bowtie(),
        "three_on_an_edge": shapes.three_on_an_edge(),
        "mobius": shapes.mobius(),
        "random_faces": shapes.mesh(V, F),
    }


#: the queue's testing operation (sleep, fail, poison the GPU context) has nothing to compare
TESTING_OP = "sleep"
MESHES: dict[str, Any] = {name: (lambda n=name: shapes.load(n)) for name in all_meshes()}
MESHES.update({k: (lambda v=v: v) for k, v in adversarial().items()})
CASES = [
    pytest.param(op.name, params, name, id=f"{op.name}-{i}-{name}")
    for op in OPS
    if op.cupy is not None and op.name != TESTING_OP
    for i, params in enumerate(VARIANTS[op.name])
    for name in MESHES
]


def test_every_gpu_op_has_variants():
    for op in OPS:
        if op.cupy is not None and op.name != TESTING_OP:
            assert op.name in VARIANTS, f"add {op.name} to VARIANTS"


def well_conditioned(mesh: TriMesh, weighting: str) -> np.ndarray:
    """Vertices whose weighted normals do not (nearly) cancel: elsewhere, as on a Moebius strip
    or overlapping random faces, the direction is rounding noise in any precision."""
    V, F = to_numpy(mesh.V), to_numpy(mesh.F)
    cross = face_cross64(np, V, F)
    if weighting == "area":
        w = np.repeat(cross, 3, axis=0)
    elif weighting == "max":
        from workers.engine.ops.vertex_normals import _max_corners

        w = _max_corners(np, mesh.to("numpy"))
    elif weighting == "uniform":
        w = np.repeat(unitize(np, cross), 3, axis=0)
    else:
        w = np.repeat(unitize(np, cross), 3, axis=0) * corner_angles64(np, V, F).ravel()[:, None]
    acc = scatter_rows(np, F.ravel(), w, mesh.n_vertices)
    total = scatter_rows(np, F.ravel(), np.linalg.norm(w, axis=1), mesh.n_vertices)
    return np.linalg.norm(acc, axis=1) > 1e-3 * total


def _run(impl: Any, mesh: TriMesh, params: Any) -> Any:
    try:
        return impl(mesh, params)
    except EngineError as exc:
        return exc


def _close_report(a: Any, b: Any, path: str = "") -> None:
    """Equal reports, but for ``execution`` (how each backend ran: path, iterations, patches)."""
    if isinstance(a, dict):
        a = {k: v for k, v in a.items() if k != "execution"}
        b = {k: v for k, v in b.items() if k != "execution"}
        assert set(a) == set(b), path
        for k in a:
            _close_report(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close_report(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert b == pytest.approx(a, rel=1e-5, abs=1e-6), path
    else:
        assert a == b, path


@pytest.mark.parametrize(("op_name", "raw", "mesh_name"), CASES)
def test_gpu_matches_numpy_twin(op_name, raw, mesh_name):
    op = OPS.get(op_name)
    params = op.parse_params(raw)
    mesh = MESHES[mesh_name]()
    ref = _run(op.numpy, mesh, params)
    got = _run(op.cupy, mesh.to("cupy"), params)
    if isinstance(ref, EngineError) or isinstance(got, EngineError):
        assert type(got) is type(ref) and got.code == ref.code, (ref, got)
        return
    assert got.mesh.backend == "cupy", "the GPU implementation must leave the mesh on the GPU"
    a, b = ref.mesh, got.mesh
    if op_name in DYNAMIC:
        if op_name in ("delaunay_flip", "isotropic_remesh"):
            _same_invariants(op_name, a, b.to("numpy"), ref.report, got.report)
        else:
            compare_dynamic(op_name, mesh_name, a, b, ref.report, got.report)
        return
    if op.kind is OpKind.reindex:
        np.testing.assert_array_equal(to_numpy(b.V), to_numpy(a.V))
    else:
        np.testing.assert_allclose(to_numpy(b.V), to_numpy(a.V), atol=1e-6)
    np.testing.assert_array_equal(to_numpy(b.F), to_numpy(a.F))
    for attrs_a, attrs_b in ((a.vertex_attrs, b.vertex_attrs), (a.face_attrs, b.face_attrs)):
        assert set(attrs_a) == set(attrs_b)
        for k in attrs_a:
            x, y = to_numpy(attrs_a[k]).astype(np.float64), to_numpy(attrs_b[k]).astype(np.float64)
            assert x.shape == y.shape, k
            if op_name == "vertex_normals" and k == "vertex_normals":
                keep = well_conditioned(mesh, raw.get("weighting", "area"))
                x, y = x[keep], y[keep]
            np.testing.assert_allclose(
                y,
                x,
                atol=ATOL.get(k, 1e-6),
                rtol=RTOL.get(k, 0.0),
                err_msg=f"{op_name} {k} on {mesh_name}",
            )
    _close_report(ref.report, got.report)
    assert set(ref.artifacts) == set(got.artifacts)
    for k in ref.artifacts:
        x, y = to_scipy(ref.artifacts[k]), to_scipy(got.artifacts[k])
        scale = max(1.0, float(abs(x).max()))
        assert abs(x - y).max() <= 1e-9 * scale, f"{op_name} artifact {k} on {mesh_name}"


def _same_invariants(op_name: str, a: TriMesh, b: TriMesh, ra: dict, rb: dict) -> None:
    from workers.engine.ops.stats import mesh_stats

    sa, sb = mesh_stats(a), mesh_stats(b)
    keys = ["euler_characteristic", "boundary_loops", "non_manifold_edges", "components"]
    keys += ["consistently_oriented", "degenerate_faces"]
    if op_name == "delaunay_flip":
        keys.append("boundary_edges")  # a remesh splits boundary edges by length
    for k in keys:
        assert sa[k] == sb[k], (op_name, k)
    assert set(a.vertex_attrs) == set(b.vertex_attrs) and set(a.face_attrs) == set(b.face_attrs)
    if op_name == "delaunay_flip":
        np.testing.assert_array_equal(to_numpy(b.V), to_numpy(a.V))
        assert a.n_faces == b.n_faces
        assert ra["non_delaunay_before"] == rb["non_delaunay_before"]
        for r in (ra, rb):
            assert r["non_delaunay_after"] == sum(r["blocked"].values()) + r["unresolved"]
        assert rb["non_delaunay_after"] <= ra["non_delaunay_after"] + max(
            2, 0.01 * ra["non_delaunay_before"]
        )
    if op_name == "isotropic_remesh":
        qa, qb = ra["quality_after"], rb["quality_after"]
        assert qb["edge_length_cv"] <= qa["edge_length_cv"] * 1.1 + 0.01
        # within a fifth, or half a degree where both are near zero (beetle's locked slivers)
        assert qb["min_angle"] >= qa["min_angle"] * 0.8 - 0.5
        assert qb["valence_6_fraction"] >= qa["valence_6_fraction"] - 0.05
        assert abs(b.n_faces - a.n_faces) <= 0.05 * a.n_faces + 4


def compare_dynamic(
    op_name: str, mesh_name: str, a: TriMesh, b: TriMesh, rep_a: dict, rep_b: dict
) -> None:
    """Same topology (Euler characteristic, components, boundary loops, non-manifold counts,
    orientation), a face count within 3 % (or 4 faces), the same attributes, and a result as
    valid as the twin's: no index out of range, no unused vertex, no more degenerate faces."""
    from workers.engine.ops.stats import mesh_stats

    sa, sb = mesh_stats(a), mesh_stats(b.to("numpy"))
    for k in (
        "euler_characteristic",
        "components",
        "boundary_loops",
        "non_manifold_edges",
        "non_manifold_vertices",
        "manifold",
        "consistently_oriented",
        "genus",
    ):
        assert sb[k] == sa[k], f"{op_name} {k} on {mesh_name}"
    assert sb["degenerate_faces"] == sa["degenerate_faces"] and sb["unused_vertices"] == 0
    assert abs(b.n_faces - a.n_faces) <= max(4, 0.03 * a.n_faces), (a.n_faces, b.n_faces)
    Fb = to_numpy(b.F)
    assert Fb.size == 0 or (Fb.min() >= 0 and Fb.max() < b.n_vertices)
    assert set(a.vertex_attrs) == set(b.vertex_attrs)
    assert set(a.face_attrs) == set(b.face_attrs)
    assert set(rep_a) == set(rep_b)
    if "short_edges_left" in rep_a:
        assert rep_b["short_edges_left"] <= rep_a["short_edges_left"] + max(4, 0.03 * a.n_faces)


def test_pipeline_keeps_the_mesh_on_the_gpu():
    mesh = shapes.load("stanford-bunny.obj")
    steps = [
        "weld",
        "remove_degenerate_faces",
        "face_normals",
        ("vertex_normals", {"weighting": "angle"}),
        "gaussian_curvature",
        "stats",
    ]
    gpu = mesh.run(steps, device="gpu")
    cpu = mesh.run(steps, device="cpu")
    assert gpu.backend == "cupy" and gpu.mesh.backend == "cupy"
    assert all(s.backend == "cupy" for s in gpu.steps)
    assert set(gpu.timings) == set(cpu.timings) | {"transfer"}
    np.testing.assert_allclose(
        to_numpy(gpu.mesh.vertex_attrs["gaussian_curvature"]),
        cpu.mesh.vertex_attrs["gaussian_curvature"],
        atol=2e-4,
    )
    assert gpu.reports["stats"]["euler_characteristic"] == -3
