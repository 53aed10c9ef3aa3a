"""``marching_cubes``: a source operation; the isosurface of a scalar volume described in the spec.

A source operation makes the pipeline's mesh instead of transforming one (``OpKind.source``): it
must be the first step. It receives the job's input: with no input (or a mesh, which it ignores)
it contours an analytic field; an uploaded volume (``.npy``, NRRD or ``.raw``, read by
``io/volumes.py``) arrives as a faceless one-vertex mesh carrying the grid in its ``volume``
attribute and, from NRRD, its placement in ``volume_origin``/``volume_spacing``
(``marching_cubes.volume_mesh``).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..errors import OpParamsError
from ..io.volumes import RAW_DTYPES, RawLayout
from ..marching_cubes import extract, sphere_distance
from ..mesh import TriMesh
from .registry import Element, Operation, OpKind, OpParams, OpResult, Output, Tolerance


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
    """The volume uploaded with the job (``.npy``, NRRD, or ``.raw`` with ``shape`` and
    ``dtype``), ``S[i, j, k]``, its samples at ``origin + spacing * (i, j, k)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["volume"] = Field(description="Field kind.")
    origin: list[Annotated[float, Field(ge=-1e18, le=1e18, allow_inf_nan=False)]] | None = Field(
        None,
        min_length=3,
        max_length=3,
        description="Position of sample (0, 0, 0). Default: the file's (NRRD space origin), "
        "else (0, 0, 0).",
    )
    spacing: list[Annotated[float, Field(gt=0.0, le=1e9)]] | None = Field(
        None,
        min_length=3,
        max_length=3,
        description="Distance between samples along each axis. Default: the file's (NRRD space "
        "directions or spacings), else (1, 1, 1).",
    )
    shape: list[Annotated[int, Field(ge=2, le=1024)]] | None = Field(
        None,
        min_length=3,
        max_length=3,
        description="Samples along each axis (nx, ny, nz): needed for a .raw upload, checked "
        "against the volume otherwise.",
    )
    dtype: Literal[RAW_DTYPES] | None = Field(  # type: ignore[valid-type]
        None, description="Sample type of a .raw upload (needed for .raw, ignored otherwise)."
    )
    order: Literal["C", "F"] = Field(
        "C",
        description="Sample order of a .raw upload: 'C': the last index varies fastest (NumPy's "
        "default), 'F': the first (Fortran, NRRD).",
    )
    endian: Literal["little", "big"] = Field(
        "little", description="Byte order of a .raw upload's multi-byte samples."
    )

    def raw_layout(self) -> RawLayout | None:
        """How a ``.raw`` upload is laid out, or None when the spec does not say."""
        if self.shape is None or self.dtype is None:
            return None
        return RawLayout(
            (self.shape[0], self.shape[1], self.shape[2]), self.dtype, self.order, self.endian
        )


class Params(OpParams):
    # a plain union: `type` may be left out for the default sphere_distance
    field: SphereDistance | UploadedVolume = Field(
        default_factory=SphereDistance,  # type: ignore[arg-type]
        description='The scalar volume to contour: an analytic field, or `{"type": "volume"}` '
        "for the uploaded volume (`.npy`, NRRD, or `.raw` with `shape` and `dtype`).",
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
    xp = mesh.xp
    f = p.field
    if isinstance(f, UploadedVolume):
        vol = mesh.vertex_attrs.get("volume")
        if vol is None or mesh.n_faces or vol.ndim != 4:
            raise OpParamsError(
                "no volume was uploaded: send a .npy, .nrrd or .raw volume as the job's file",
                code="op.no_volume",
            )
        S = vol[0]
        resolution: list[int] | int = [int(x) for x in S.shape]
        if f.shape is not None and list(f.shape) != resolution:
            raise OpParamsError(
                "field shape does not match the uploaded volume",
                code="op.volume_shape_mismatch",
                shape=list(f.shape),
                volume_shape=resolution,
            )
        origin = _placement(mesh, f.origin, "volume_origin", 0.0)
        spacing = _placement(mesh, f.spacing, "volume_spacing", 1.0)
    else:
        S, origin, spacing = sphere_distance(xp, f.resolution, tuple(f.center))  # type: ignore[arg-type]
        resolution = f.resolution
    V, F, N, counts = extract(xp, S, float(p.isovalue), origin, spacing, k=p.k)  # type: ignore[arg-type]
    del S
    va = {"vertex_normals": N.astype(p.dtype)} if p.normals else {}
    with np.errstate(over="ignore"):
        V = V.astype(p.dtype)
    out = TriMesh(V, F.astype(xp.int32), va, source="marching_cubes")
    out.check_finite()  # a file's placement beyond the output dtype's range
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


def _placement(
    mesh: TriMesh, given: list[float] | None, attr: str, default: float
) -> tuple[float, ...]:
    """The spec's origin or spacing, else the file's (carried as a vertex attribute), else
    ``default`` on every axis."""
    if given is not None:
        return tuple(float(x) for x in given)
    if attr in mesh.vertex_attrs:
        from ..backend import to_numpy

        return tuple(float(x) for x in to_numpy(mesh.vertex_attrs[attr]).reshape(-1)[:3])
    return (default, default, default)


OP = Operation(
    name="marching_cubes",
    summary="Isosurface of a scalar volume (source step: makes the mesh; must come first).",
    description="""
    Marching cubes with vertices keyed by grid-edge id and welded (KEY-WELD): one vertex per
    sign-changing grid edge (``3 * point + axis``, sorted; corners find theirs by binary search),
    so the output has no duplicate vertices and needs no floating-point comparison. The 256-case
    table is generated from face rules that agree between neighbouring cells, so the surface of
    a field whose isosurface stays inside the grid is closed and manifold, oriented with normals
    towards increasing field values (outward for a distance field). Positions by linear
    interpolation on the edge (float64); normals from the gradient by central differences at the
    edge's ends, interpolated and normalized. With ``k > 0`` crossings near a grid point take the
    point's key (the paper's coarsening): their positions and normals are averaged and the
    collapsed triangles dropped. A grid point exactly at the isovalue counts as outside; with
    ``k = 0`` the vertices of its edges then coincide in position (distinct vertices).

    The volume is analytic, ``field: {"type": "sphere_distance", "resolution": 2..512,
    "center": [...]}`` (the KEY-WELD paper's spherical-distance data set: isovalue 0.98 at 64^3
    gives its 35,996 triangles), or the job's uploaded file, ``field: {"type": "volume"}``: a
    3-D ``.npy`` array; an NRRD file (``raw`` or ``gzip`` encoding; origin and spacing from its
    ``space origin``/``space directions`` or ``spacings`` unless the field gives them; detached
    data is refused as ``format.nrrd_detached``); or ``.raw`` samples described by ``shape``,
    ``dtype``, ``order`` and ``endian`` in the field (a size that does not match is refused as
    ``format.raw_size_mismatch``). As a source step it must come first, and the job then needs
    no uploaded mesh.
    """,
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
    # the input mesh is ignored: every mesh runs the same volume (kept small)
    test_variants=(
        {"field": {"resolution": 24}},
        {"field": {"resolution": 40, "center": [0.1, 0.0, -0.05]}, "isovalue": 0.7, "k": 1.0},
        {"field": {"resolution": 20}, "isovalue": 1.2, "dtype": "float64"},
    ),
    tolerances={"vertex_normals": Tolerance(atol=2e-4)},
)
