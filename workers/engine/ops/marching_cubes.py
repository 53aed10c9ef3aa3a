"""``marching_cubes``: a source operation; the isosurface of a scalar volume described in the spec.

A source operation makes the pipeline's mesh instead of transforming one (``OpKind.source``): it
must be the first step. It receives the job's input: with no input (or a mesh, which it ignores)
it contours an analytic field; an uploaded ``.npy`` volume arrives as a faceless one-vertex mesh
carrying the grid in its ``volume`` attribute (``marching_cubes.volume_mesh``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import OpParamsError
from ..marching_cubes import extract, sphere_distance
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output


class SphereDistance(BaseModel):
    """The KEY-WELD paper's spherical-distance volume: the distance to ``center``, sampled on a
    ``resolution^3`` grid spanning [-1, 1]^3."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["sphere_distance"] = Field("sphere_distance", description="Field kind.")
    resolution: int = Field(64, ge=2, le=512, description="Grid points per axis.")
    center: list[float] = Field(
        default_factory=lambda: [0.0, 0.0, 0.0],
        min_length=3,
        max_length=3,
        description="The point distances are measured from.",
    )


class UploadedVolume(BaseModel):
    """The volume uploaded with the job (a 3-D ``.npy`` array, ``S[i, j, k]``), its samples at
    ``origin + spacing * (i, j, k)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["volume"] = Field(description="Field kind.")
    origin: list[float] = Field(
        default_factory=lambda: [0.0, 0.0, 0.0],
        min_length=3,
        max_length=3,
        description="Position of sample (0, 0, 0).",
    )
    spacing: list[Annotated[float, Field(gt=0.0, le=1e9)]] = Field(
        default_factory=lambda: [1.0, 1.0, 1.0],
        min_length=3,
        max_length=3,
        description="Distance between samples along each axis.",
    )


class Params(OpParams):
    # a plain union: `type` may be left out for the default sphere_distance
    field: SphereDistance | UploadedVolume = Field(
        default_factory=SphereDistance,  # type: ignore[arg-type]
        description='The scalar volume to contour: an analytic field, or `{"type": "volume"}` '
        "for the uploaded `.npy` array.",
    )
    isovalue: float = Field(
        0.5,
        ge=-1e12,
        le=1e12,
        description="The surface is where the field equals this value (0.98 on the 64^3 sphere "
        "distance gives the KEY-WELD paper's data set A: 35,996 triangles).",
    )
    k: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="KEY-WELD coarsening: crossings within k/2 of a grid edge's length of a grid "
        "point weld into one vertex there (0: none; 1: the paper's strongest, minimum triangle "
        "quality guaranteed).",
    )
    normals: bool = Field(
        True, description="Attach vertex_normals from the field's gradient (central differences)."
    )
    dtype: Literal["float32", "float64"] = Field("float32", description="Position precision.")


def _array(mesh: TriMesh, p: Params) -> OpResult:
    """Marching cubes with vertices keyed by grid-edge id and welded (KEY-WELD): one vertex per
    sign-changing grid edge (``3 * point + axis``, sorted; corners find theirs by binary search),
    so the output has no duplicate vertices and needs no floating-point comparison. The 256-case
    table is generated from face rules that agree between neighbouring cells, so the surface of
    a field whose isosurface stays inside the grid is closed and manifold, oriented with normals
    towards increasing field values (outward for a distance field). Positions by linear
    interpolation on the edge (float64); normals from the gradient by central differences at the
    edge's ends, interpolated and normalized. With ``k > 0`` crossings near a grid point take the
    point's key (the paper's coarsening): their positions and normals are averaged and the
    collapsed triangles dropped. A grid point exactly at the isovalue counts as outside; with
    ``k = 0`` the vertices of its edges then coincide in position (distinct vertices)."""
    xp = mesh.xp
    f = p.field
    if isinstance(f, UploadedVolume):
        vol = mesh.vertex_attrs.get("volume")
        if vol is None or mesh.n_faces or vol.ndim != 4:
            raise OpParamsError(
                "no volume was uploaded: send a 3-D .npy array as the job's file",
                code="op.no_volume",
            )
        S = vol[0]
        origin, spacing = tuple(f.origin), tuple(f.spacing)
        resolution: list[int] | int = [int(x) for x in S.shape]
    else:
        S, origin, spacing = sphere_distance(xp, f.resolution, tuple(f.center))  # type: ignore[arg-type]
        resolution = f.resolution
    V, F, N, counts = extract(xp, S, float(p.isovalue), origin, spacing, k=p.k)  # type: ignore[arg-type]
    del S
    va = {"vertex_normals": N.astype(p.dtype)} if p.normals else {}
    out = TriMesh(V.astype(p.dtype), F.astype(xp.int32), va, source="marching_cubes")
    report = {
        "field": f.type,
        "resolution": resolution,
        "isovalue": float(p.isovalue),
        "k": float(p.k),
        **counts,
        "vertices": out.n_vertices,
        "faces": out.n_faces,
    }
    return OpResult(out, report)


OP = Operation(
    name="marching_cubes",
    summary="Isosurface of a scalar volume (source step: makes the mesh; must come first).",
    kind=OpKind.source,
    params=Params,
    numpy=_array,
    cupy=_array,  # flags, one sort, binary search, gathers: the same array code on CuPy
    outputs={
        "vertex_normals": Output(
            Element.vertex, "(n_vertices, 3)", "float32", "Unit normals from the field gradient."
        )
    },
    reports="field, resolution, isovalue, k, sign_changing_edges, active_cells, "
    "triangles_generated, vertices_merged, degenerate_removed, vertices, faces",
)
