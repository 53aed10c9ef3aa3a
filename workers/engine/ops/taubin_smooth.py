"""``taubin_smooth``: Taubin's lambda|mu smoothing, a low-pass filter that does not shrink."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from ..errors import OpParamsError
from ..mesh import TriMesh
from . import _smoothing
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_name=True, serialize_by_alias=True
    )

    weights: _smoothing.Weights = Field(
        "uniform",
        description="Neighbour weights: 'uniform' (Taubin's choice) or 'cotangent' (clamped at "
        "0, recomputed every step).",
    )
    iterations: int = Field(
        10, ge=1, le=1000, description="Number of lambda|mu pairs (two steps each)."
    )
    lambda_: float = Field(
        0.5, gt=0.0, le=1.0, alias="lambda", description="The positive (shrinking) step factor."
    )
    pass_band: float = Field(
        0.1,
        gt=0.0,
        le=0.5,
        description="Pass-band frequency k_PB = 1/lambda + 1/mu: frequencies below it are kept; "
        "mu is derived from it (Taubin suggests 0.01 to 0.1).",
    )
    fix_boundary: bool = Field(True, description="Keep vertices on boundary edges in place.")


def mu(p: Params) -> float:
    """Taubin's negative factor from ``1/lambda + 1/mu = k_PB``."""
    return 1.0 / (p.pass_band - 1.0 / p.lambda_)


def _check(p: Params) -> float:
    """``mu``, after checking that the highest frequency (eigenvalue 2 of the normalized
    Laplacian) is not amplified: ``|(1 - 2 lambda)(1 - 2 mu)| <= 1``."""
    m = mu(p)
    gain = abs((1.0 - 2.0 * p.lambda_) * (1.0 - 2.0 * m))
    if gain > 1.0:
        raise OpParamsError(
            "lambda and pass_band amplify high frequencies",
            code="op.taubin_unstable",
            **{"lambda": p.lambda_, "mu": m, "pass_band": p.pass_band, "gain_at_k2": gain},
        )
    return m


def _numpy(mesh: TriMesh, p: Params) -> OpResult:
    m = _check(p)
    fixed = _smoothing.fixed_vertices(mesh, p.fix_boundary)
    X = _smoothing.smooth_numpy(mesh, [p.lambda_, m], p.iterations, p.weights, fixed)
    return _result(mesh, X, p, m)


def _cupy(mesh: TriMesh, p: Params) -> OpResult:
    """Two ``kernels/laplacian_smooth.cu`` steps per iteration (see ``_smoothing.smooth_cupy``)."""
    m = _check(p)
    fixed = _smoothing.fixed_vertices(mesh, p.fix_boundary)
    X = _smoothing.smooth_cupy(
        mesh, [p.lambda_, m], p.iterations, p.weights, fixed, op="taubin_smooth"
    )
    return _result(mesh, X, p, m)


def _result(mesh: TriMesh, X: Any, p: Params, m: float) -> OpResult:
    out, report = _smoothing.finish(mesh, X, p.iterations)
    return OpResult(out, {**report, "mu": m})


OP = Operation(
    name="taubin_smooth",
    summary="Taubin lambda|mu smoothing: removes noise without shrinking; moves vertices.",
    description="""
    Taubin, "A signal processing approach to fair surface design" (SIGGRAPH 1995): each
    iteration is a shrinking Laplacian step with factor ``lambda > 0`` followed by an inflating
    one with ``mu = 1 / (k_PB - 1/lambda) < -lambda``. On an eigenvector of the normalized
    Laplacian with eigenvalue ``k`` (in [0, 2]) one iteration multiplies by ``(1 - lambda k)(1 - mu
    k)``: close to 1 below the pass band ``k_PB``, small above it. So noise is removed while the
    low frequencies, and with them the overall size, are kept, unlike ``laplacian_smooth``.

    Parameters whose gain at ``k = 2`` exceeds 1 in magnitude would amplify the highest
    frequency and are refused (``op.taubin_unstable``); ``lambda <= 0.5`` is always accepted.
    Steps, weights and fixed vertices are those of ``laplacian_smooth``; float64 throughout,
    stored in the mesh's dtype. Reports ``iterations``, ``mu`` and ``max_displacement``.
    """,
    kind=OpKind.static,
    params=Params,
    check=_check,
    numpy=_numpy,
    cupy=_cupy,
    reports="iterations; mu: the derived negative factor; max_displacement",
    test_variants=(
        {},
        {"weights": "cotangent", "iterations": 3, "fix_boundary": False},
    ),
)
