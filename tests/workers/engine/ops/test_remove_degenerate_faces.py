"""``remove_degenerate_faces``: repeated corners always; zero or small area when ``geometric``."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import SHARED, load, mesh, run, stats, tetrahedron
from workers.engine import OpParamsError, TriMesh
from workers.engine.ops import OPS

# 0 1 3: fine (area 0.5); 0 1 2: collinear (area 0); 0 0 3 and 3 3 3: repeated corners;
# 0 4 3: area 5e-7 (small)
V = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0), (1e-6, 0, 0)]
F = [(0, 1, 3), (0, 1, 2), (0, 0, 3), (3, 3, 3), (0, 4, 3)]


def _remove(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    # the op itself (a pipeline refuses a step that leaves no face: see test_pipeline)
    op = OPS.get("remove_degenerate_faces")
    res = op.numpy(m, op.parse_params(params))
    return res.mesh, res.report


def _areas(m: TriMesh) -> np.ndarray:
    P = np.asarray(m.V, dtype=np.float64)[np.asarray(m.F)]
    return 0.5 * np.linalg.norm(np.cross(P[:, 1] - P[:, 0], P[:, 2] - P[:, 0]), axis=1)


def _case() -> TriMesh:
    return mesh(V, F, face_attrs={"fid": np.arange(5)})


@pytest.mark.parametrize(
    ("params", "kept", "report"),
    [
        ({}, [0, 4], (5, 3, 2, 1)),  # default: geometric, area 0
        ({"geometric": False}, [0, 1, 4], (5, 2, 2, 0)),
        ({"area_threshold": 1e-6}, [0], (5, 4, 2, 2)),
        ({"area_threshold": 1.0}, [], (5, 5, 2, 3)),
    ],
)
def test_which_faces_go(params: dict, kept: list[int], report: tuple[int, ...]) -> None:
    m = _case()
    out, rep = _remove(m, **params)
    np.testing.assert_array_equal(out.face_attrs["fid"], kept)
    np.testing.assert_array_equal(out.F, np.asarray(F)[kept].reshape(-1, 3))
    assert (
        rep["faces_before"],
        rep["removed"],
        rep["removed_repeated_index"],
        rep["removed_small_area"],
    ) == report
    assert out.n_vertices == m.n_vertices  # vertices stay; chain remove_unused_vertices


def test_chained_with_remove_unused() -> None:
    res = run(_case(), "remove_degenerate_faces", "remove_unused_vertices")
    out = res.mesh
    assert (out.n_vertices, out.n_faces) == (4, 2)
    s = stats(out)
    assert (s["degenerate_faces"], s["unused_vertices"]) == (0, 0)


def test_clean_mesh_is_unchanged() -> None:
    t = tetrahedron()
    out, rep = _remove(t)
    assert rep["removed"] == 0
    np.testing.assert_array_equal(out.F, t.F)


@pytest.mark.parametrize("name", SHARED)
def test_no_zero_area_face_survives(name: str) -> None:
    m = load(name)
    out, rep = _remove(m)
    assert out.n_faces == m.n_faces - rep["removed"]
    assert (_areas(out) > 0).all()
    assert rep["removed"] == int((_areas(m) == 0).sum())
    assert stats(out)["degenerate_faces"] == 0


def test_after_a_collapsing_weld() -> None:
    Vw = [(0, 0, 0), (1, 0, 0), (1, 1e-4, 0), (0, 1, 0)]
    res = run(
        mesh(Vw, [(0, 1, 2), (0, 2, 3)]), ("weld", {"tolerance": 1e-3}), "remove_degenerate_faces"
    )
    assert res.reports["weld"]["degenerate_faces"] == 1
    assert res.reports["remove_degenerate_faces"]["removed_repeated_index"] == 1
    assert res.mesh.n_faces == 1


@pytest.mark.parametrize(
    "params",
    [
        {"area_threshold": -1.0},  # negative
        {"area_threshold": 1e13},  # above the bound
        {"geometric": "sometimes"},  # not a boolean
        {"threshold": 0.1},  # unknown key
    ],
)
def test_bad_params(params: dict) -> None:
    with pytest.raises(OpParamsError) as ei:
        _remove(tetrahedron(), **params)
    assert ei.value.code == "op.params_invalid"
