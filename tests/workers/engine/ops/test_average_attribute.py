"""``average_attribute``: constants are fixed points, one round is the one-ring mean, repeated
rounds converge to the degree-weighted mean, values stay within the input's range, shapes and
dtypes are kept, renormalization gives unit rows, and missing attributes are refused."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import CLOSED, cube, load, mesh, run, tetrahedron, welded
from workers.engine import OpParamsError, TriMesh
from workers.engine.backend import to_numpy
from workers.engine.ops import OPS


def _avg(m: TriMesh, **params: object) -> tuple[TriMesh, dict]:
    res = run(m, ("average_attribute", params))
    assert res.mesh.V is m.V and res.mesh.F is m.F
    return res.mesh, res.reports["average_attribute"]


def _with(m: TriMesh, **attrs: np.ndarray) -> TriMesh:
    return m.with_attrs(vertex=attrs)


@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("name", ["stanford-bunny.obj", "beetle.obj", "rx-torus.obj"])
def test_constant_attributes_are_unchanged(name: str, include_self: bool) -> None:
    m = load(name)  # the bunny has unused vertices, the beetle non-manifold edges
    c = np.full(m.n_vertices, 2.5, dtype=np.float32)
    v = np.tile(np.array([1.0, -2.0, 0.25], dtype=np.float32), (m.n_vertices, 1))
    m = _with(m, c=c, v=v)
    out, _ = _avg(m, attribute="c", include_self=include_self, iterations=5)
    np.testing.assert_array_equal(out.vertex_attrs["c"], c)
    out, _ = _avg(m, attribute="v", include_self=include_self, iterations=5)
    np.testing.assert_array_equal(out.vertex_attrs["v"], v)


def test_one_round_is_the_one_ring_mean() -> None:
    # a square fan: centre 4 joined to the four corners, each corner to two corners and the centre
    V = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0.5, 0.5, 0)]
    F = [(0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)]
    a = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    m = _with(mesh(V, F), a=a)
    out, rep = _avg(m, attribute="a")
    assert rep == {"attribute": "a", "iterations": 1}
    expect = [(2 + 4 + 10) / 3, (1 + 3 + 10) / 3, (2 + 4 + 10) / 3, (1 + 3 + 10) / 3, 2.5]
    np.testing.assert_allclose(out.vertex_attrs["a"], expect, rtol=1e-15)
    out, _ = _avg(m, attribute="a", include_self=True)
    expect = [(1 + 2 + 4 + 10) / 4, (2 + 1 + 3 + 10) / 4, 19 / 4, 18 / 4, 20 / 5]
    np.testing.assert_allclose(out.vertex_attrs["a"], expect, rtol=1e-15)


def test_repeated_rounds_converge_to_the_degree_weighted_mean() -> None:
    m = cube()
    rng = np.random.default_rng(6)
    a = rng.normal(size=m.n_vertices)
    deg = np.bincount(np.asarray(m.topology.EV).ravel(), minlength=m.n_vertices)
    # the averaging matrix D^-1 A keeps sum(d_i a_i) / sum(d_i) (its left Perron vector is d)
    target = (deg * a).sum() / deg.sum()
    out, _ = _avg(_with(m, a=a), attribute="a", iterations=200)
    np.testing.assert_allclose(out.vertex_attrs["a"], target, atol=1e-12)


@pytest.mark.parametrize("name", CLOSED[:6])
def test_values_stay_within_the_input_range(name: str) -> None:
    m = load(name)
    rng = np.random.default_rng(1)
    a = rng.uniform(-3, 7, size=(m.n_vertices, 2))
    out, _ = _avg(_with(m, a=a), attribute="a", iterations=3)
    b = out.vertex_attrs["a"]
    assert (b.min(axis=0) >= a.min(axis=0)).all() and (b.max(axis=0) <= a.max(axis=0)).all()
    assert b.std() < a.std()


def test_output_name_shapes_and_dtypes() -> None:
    t = tetrahedron()
    m = _with(
        t,
        s32=np.arange(4, dtype=np.float32),
        s64=np.arange(4, dtype=np.float64),
        labels=np.array([0, 1, 2, 3], dtype=np.int32),
        tensor=np.arange(4 * 2 * 3, dtype=np.float32).reshape(4, 2, 3),
    )
    out, rep = _avg(m, attribute="s32", output="smooth")
    assert rep["attribute"] == "smooth"
    np.testing.assert_array_equal(out.vertex_attrs["s32"], m.vertex_attrs["s32"])
    # on a tetrahedron every vertex's one-ring is the three others
    np.testing.assert_allclose(out.vertex_attrs["smooth"], (6 - np.arange(4)) / 3, rtol=1e-7)
    assert out.vertex_attrs["smooth"].dtype == np.float32
    assert _avg(m, attribute="s64")[0].vertex_attrs["s64"].dtype == np.float64
    assert _avg(m, attribute="labels")[0].vertex_attrs["labels"].dtype == np.float32
    tensor = _avg(m, attribute="tensor")[0].vertex_attrs["tensor"]
    assert tensor.shape == (4, 2, 3)
    np.testing.assert_allclose(tensor[0], m.vertex_attrs["tensor"][1:].mean(axis=0), rtol=1e-6)


def test_renormalized_normals_are_unit_and_smoother() -> None:
    m = run(welded("spot.obj"), "vertex_normals").mesh
    out, _ = _avg(m, attribute="vertex_normals", renormalize=True, iterations=3, output="n")
    n0, n1 = m.vertex_attrs["vertex_normals"], out.vertex_attrs["n"]
    np.testing.assert_allclose(np.linalg.norm(n1, axis=1), 1.0, atol=1e-6)
    # neighbouring normals agree better after averaging
    EV = np.asarray(m.topology.EV)
    assert (n1[EV[:, 0]] * n1[EV[:, 1]]).sum(1).mean() > (n0[EV[:, 0]] * n0[EV[:, 1]]).sum(1).mean()


def test_unknown_and_unusable_attributes_are_refused() -> None:
    m = cube().with_attrs(face={"area": np.ones(12)}, vertex={"tag": np.array(["a"] * 8)})
    with pytest.raises(OpParamsError) as ei:
        _avg(m, attribute="curvature")
    assert ei.value.code == "op.unknown_attribute"
    assert ei.value.detail["vertex_attributes"] == ["tag"]
    with pytest.raises(OpParamsError) as ei:
        _avg(m, attribute="area")  # a face attribute
    assert ei.value.code == "op.unknown_attribute" and ei.value.detail["is_face_attribute"]
    with pytest.raises(OpParamsError) as ei:
        _avg(m, attribute="tag")
    assert ei.value.code == "op.attribute_not_numeric"


@pytest.mark.parametrize(
    "params",
    [
        {},  # attribute is required
        {"attribute": ""},  # empty name
        {"attribute": "two words"},  # not a name
        {"attribute": "a", "output": "x-y"},  # not a name
        {"attribute": "a", "iterations": 0},  # at least one round
        {"attribute": "a", "iterations": 1001},  # at most 1000
        {"attribute": "a", "weights": "cotangent"},  # unknown key
    ],
)
def test_bad_params(params: dict) -> None:
    with pytest.raises(OpParamsError) as ei:
        _avg(_with(cube(), a=np.zeros(8)), **params)
    assert ei.value.code == "op.params_invalid"


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["stanford-bunny.obj", "beetle.obj", "suzanne.obj"])
@pytest.mark.parametrize(
    "params",
    [
        {"attribute": "p", "iterations": 3},
        {"attribute": "s", "include_self": True, "output": "t"},
        {"attribute": "p", "renormalize": True, "iterations": 2},
    ],
)
def test_gpu_matches_the_twin(name: str, params: dict) -> None:
    m = load(name)
    rng = np.random.default_rng(0)
    m = _with(m, p=np.asarray(m.V).copy(), s=rng.normal(size=m.n_vertices))
    op = OPS.get("average_attribute")
    p = op.parse_params(params)
    ref = op.numpy(m, p).mesh.vertex_attrs
    got = op.cupy(m.to("cupy"), p).mesh.vertex_attrs
    for k in ref:
        np.testing.assert_allclose(to_numpy(got[k]), ref[k], rtol=1e-6, atol=1e-6)
