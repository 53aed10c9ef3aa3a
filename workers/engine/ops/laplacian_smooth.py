"""``laplacian_smooth``: explicit Laplacian smoothing with uniform or cotangent weights."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from ..mesh import TriMesh
from . import _smoothing
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_name=True, serialize_by_alias=True
    )

    weights: _smoothing.Weights = Field(
        "uniform",
        description="Neighbour weights: 'uniform' (the umbrella operator) or 'cotangent' "
        "((cot a + cot b) / 2 of the current positions, clamped at 0; mean-curvature flow).",
    )
    iterations: int = Field(10, ge=1, le=1000, description="Number of smoothing steps.")
    lambda_: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        alias="lambda",
        description="Step factor: the fraction of the way each vertex moves towards the "
        "weighted mean of its neighbours per step.",
    )
    fix_boundary: bool = Field(
        True, description="Keep vertices on boundary edges in place (open meshes keep their rim)."
    )


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    fixed = _smoothing.fixed_vertices(mesh, p.fix_boundary)
    X = _smoothing.smooth_numpy(mesh, [p.lambda_], p.iterations, p.weights, fixed)
    out, report = _smoothing.finish(mesh, X, p.iterations)
    return OpResult(out, report)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """``kernels/laplacian_smooth.cu`` per step: edge cotangents by one thread per face, the
    weighted differences by one thread per edge, the move by one thread per vertex (see
    ``_smoothing.smooth_cupy``)."""
    fixed = _smoothing.fixed_vertices(mesh, p.fix_boundary)
    X = _smoothing.smooth_cupy(
        mesh, [p.lambda_], p.iterations, p.weights, fixed, op="laplacian_smooth"
    )
    out, report = _smoothing.finish(mesh, X, p.iterations)
    return OpResult(out, report)


OP = Operation(
    name="laplacian_smooth",
    summary="Explicit Laplacian smoothing (uniform or cotangent weights); moves vertices.",
    description="""
    Explicit Laplacian smoothing (Taubin 1995, section 3; Desbrun, Meyer, Schröder and Barr
    1999 for the cotangent weights): ``iterations`` steps of ``x_i <- x_i + lambda * sum_j w_ij
    (x_j - x_i) / sum_j w_ij`` over the unique edges, all vertices at once (Jacobi). Uniform
    weights also relax the triangles tangentially; cotangent weights (recomputed every step,
    negative ones clamped to 0) move vertices mostly along the normal. Both shrink a closed
    surface (a sphere's radius decreases every step): ``taubin_smooth`` does not.

    Boundary vertices stay with ``fix_boundary``; unused vertices and vertices without a
    positive-weight neighbour never move. Connectivity, attributes and the cached topology are
    kept (attributes that depend on positions, such as normals, are not recomputed). Computed in
    float64, stored in the mesh's dtype. Reports ``iterations`` and ``max_displacement``, the
    largest distance a vertex moved.
    """,
    kind=OpKind.static,
    params=Params,
    numpy=_numpy,
    cupy=_cupy,
    reports="iterations; max_displacement: the largest distance a vertex moved",
    test_variants=(
        {},
        {"weights": "cotangent", "iterations": 5},
        {"fix_boundary": False, "iterations": 3, "lambda": 1.0},
    ),
)
