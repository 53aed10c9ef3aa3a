"""``laplacian_matrix``: the Laplacian (and mass matrix) of the mesh as sparse-matrix files."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..laplacian import cotan_laplacian, face_terms, mixed_areas64, sparse_module
from ..mesh import TriMesh
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    weights: Literal["cotangent", "uniform"] = Field(
        "cotangent",
        description="Cotangent weights (the linear finite-element stiffness matrix) or uniform "
        "weights (the graph Laplacian D - A of the edges).",
    )
    mass: Literal["none", "barycentric", "mixed"] = Field(
        "barycentric",
        description="Also return the diagonal mass matrix: a third of the incident face areas per "
        "vertex, or the mixed Voronoi areas of Meyer et al.",
    )


def _uniform(mesh: TriMesh) -> Any:
    xp = mesh.xp
    EV = mesh.topology.EV.astype(xp.int64)
    n = mesh.n_vertices
    i, j = EV[:, 0], EV[:, 1]
    deg = xp.bincount(xp.concatenate([i, j]), minlength=n).astype(xp.float64)
    ones = xp.ones(i.shape[0], dtype=xp.float64)
    rows = xp.concatenate([i, j, xp.arange(n)])
    cols = xp.concatenate([j, i, xp.arange(n)])
    vals = xp.concatenate([-ones, -ones, deg])
    L = sparse_module(xp).coo_matrix((vals, (rows, cols)), shape=(n, n))
    L.sum_duplicates()
    return L.tocsr()


def _laplacian(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    sp = sparse_module(xp)
    terms = face_terms(mesh, with_mass=p.mass == "barycentric")
    L = cotan_laplacian(mesh, terms.cot) if p.weights == "cotangent" else _uniform(mesh)
    artifacts: dict[str, Any] = {"laplacian": L}
    if p.mass == "barycentric":
        artifacts["mass"] = sp.diags(terms.mass).tocsr()
    elif p.mass == "mixed":
        artifacts["mass"] = sp.diags(
            mixed_areas64(xp, mesh.V, mesh.F, mesh.n_vertices, terms.cot)
        ).tocsr()
    report = {"n": mesh.n_vertices, "nnz": int(L.nnz), "weights": p.weights, "mass": p.mass}
    return OpResult(mesh, report, artifacts)


OP = Operation(
    name="laplacian_matrix",
    summary="The cotangent or uniform Laplacian and the mass matrix, as sparse-matrix files.",
    description="""
    Positive semidefinite Laplacian ``L`` (``L @ 1 = 0``; ``-L`` is libigl's ``cotmatrix``)
    assembled from per-face terms into one COO triplet list that the sparse library sums: the
    mesh-matrix paper's action-mapped product, with no incidence matrix formed. On the GPU the
    cotangents come from a CUDA kernel and cupyx sums the triplets; on the CPU SciPy does.
    Artifacts: ``laplacian`` and, unless ``mass`` is ``none``, ``mass`` (diagonal), written
    beside the mesh as sparse-matrix files (NPZ or Matrix Market).
    """,
    kind=OpKind.report,
    params=Params,
    numpy=_laplacian,
    cupy=_laplacian,
    reports="n, nnz, weights, mass",
    artifacts={
        "laplacian": "(n_vertices, n_vertices) sparse L, positive semidefinite",
        "mass": "(n_vertices, n_vertices) diagonal vertex areas",
    },
    test_variants=(
        {},
        {"weights": "uniform", "mass": "mixed"},
    ),
)
