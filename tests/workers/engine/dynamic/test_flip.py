"""Edge flips on the GPU (``kernels/flip.cu``) against the array code of
:mod:`workers.engine.dynamic.flip`: the same quads, reasons and valence-flip candidates bit for
bit on shared meshes, with and without a feature angle and texture seams."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workers.engine.shapes import welded
from workers.engine.dynamic._edges import edge_table, valence
from workers.engine.dynamic.flip import (
    REASONS,
    _valence_candidates,
    flip_quads,
)

MESHES = ["spot.obj", "fandisk.obj", "beetle.obj", "rx-cloth.obj", "teapot.obj"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", MESHES)
def test_flip_quads_and_valence_candidates_on_the_gpu_equal_the_twin(name: str) -> None:
    import cupy as cp

    m = welded(name)
    V = np.asarray(m.V, np.float64)
    F = np.asarray(m.F, np.int64)
    E = edge_table(np, F)
    Eg = edge_table(cp, cp.asarray(F))
    rng = np.random.default_rng(5)
    seams = np.sort(E.key[rng.random(E.n_edges) < 0.05])
    seen = np.zeros(len(REASONS), dtype=np.int64)
    for angle, sm in ((180.0, None), (45.0, seams), (20.0, None)):
        want = flip_quads(np, V, F, E, angle, sm)
        got = flip_quads(cp, cp.asarray(V), cp.asarray(F), Eg, angle,
                         None if sm is None else cp.asarray(sm))  # fmt: skip
        for field in ("a", "b", "c", "d", "f0", "f1", "reason"):
            np.testing.assert_array_equal(cp.asnumpy(getattr(got, field)), getattr(want, field))
        seen += np.bincount(want.reason, minlength=len(REASONS))
    # allowed flips and at least three kinds of refusal on every mesh
    assert seen[0] > 0 and (seen[1:] > 0).sum() >= 3
    # valence candidates, with the features of the 45-degree quads
    Q = flip_quads(np, V, F, E, 180.0)
    Qg = flip_quads(cp, cp.asarray(V), cp.asarray(F), Eg, 180.0)
    feat = np.sort(E.key[flip_quads(np, V, F, E, 45.0).reason == 2])
    val = valence(np, E, m.n_vertices)
    bnd = np.zeros(m.n_vertices, dtype=bool)
    bnd[E.EV[E.count == 1].ravel()] = True
    for sin_bound in (np.sin(np.radians(10.0)), np.sin(np.radians(35.0))):
        cand, gain = _valence_candidates(np, V, E, Q, feat, val, bnd, sin_bound)
        cg, gg = _valence_candidates(
            cp, cp.asarray(V), Eg, Qg, cp.asarray(feat), cp.asarray(val), cp.asarray(bnd),
            sin_bound,
        )  # fmt: skip
        np.testing.assert_array_equal(cp.asnumpy(gg), gain)
        np.testing.assert_array_equal(cp.asnumpy(cg), cand)
        assert (gain > 0).sum() > 0  # gains to test (the candidates: all but the teapot's)
