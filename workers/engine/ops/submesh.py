"""``submesh``: the faces selected by a component or a per-face attribute, re-indexed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field, model_validator

from ..errors import OpParamsError
from ..graph import compact_groups
from ..mesh import TriMesh
from ..reindex import remove_unused
from .registry import Operation, OpKind, OpParams, OpResult


class Params(OpParams):
    select: Literal["largest_component", "component", "attribute"] = Field(
        "largest_component",
        description="Keep the largest connected component (most faces), the component numbered "
        "`component` (in order of first face), or the faces whose `attribute` lies in [min, max].",
    )
    component: int = Field(0, ge=0, le=2**31 - 2, description="Component number to keep.")
    attribute: str = Field("", max_length=64, description="Scalar per-face attribute to test.")
    min: float = Field(-1e300, description="Smallest attribute value kept.")
    max: float = Field(1e300, description="Largest attribute value kept.")

    @model_validator(mode="after")
    def _range(self) -> Params:
        if self.min > self.max:
            raise ValueError("min must not exceed max")
        return self


def _array(mesh: TriMesh, p: Params) -> OpResult:
    xp = mesh.xp
    if p.select == "attribute":
        a = mesh.face_attrs.get(p.attribute)
        if a is None or a.ndim != 1:
            raise _unknown(p, mesh.face_attrs)
        keep = (a >= p.min) & (a <= p.max)
    else:
        comp, n_comp = mesh.topology.vertex_components()
        face_comp = comp[mesh.F[:, 0]]
        face_comp, _ = compact_groups(xp, face_comp)  # numbered by first face
        if p.select == "largest_component":
            sizes = xp.bincount(face_comp)
            target = int(xp.argmax(sizes))
        else:
            if p.component >= n_comp:
                raise OpParamsError(
                    "no component with that number",
                    code="op.unknown_component",
                    component=p.component,
                    components=n_comp,
                )
            target = p.component
        keep = face_comp == target
    faces = xp.nonzero(keep)[0]
    sub = mesh.reindexed(mesh.V, mesh.F[faces], face_take=faces)
    out, rep = remove_unused(sub)
    report = {
        "faces_kept": int(faces.shape[0]),
        "faces_before": mesh.n_faces,
        "vertices_kept": out.n_vertices,
    }
    return OpResult(out, report)


def _attributes_after(p: Params, before: dict[str, str]) -> dict[str, str]:
    """The attributes stay; selecting by an attribute needs a face attribute at this step."""
    if p.select == "attribute" and before.get(p.attribute) != "face":
        raise _unknown(p, [k for k, e in before.items() if e == "face"])
    return before


def _unknown(p: Params, face_attributes: Iterable[str]) -> OpParamsError:
    return OpParamsError(
        "no scalar face attribute of that name",
        code="op.unknown_attribute",
        attribute=p.attribute,
        available=sorted(face_attributes),
    )


OP = Operation(
    name="submesh",
    summary="Keep one connected component, or the faces whose attribute is in a range.",
    description="""
    Flag the kept faces, compact them, then drop the vertices no kept face uses (Wald,
    section 3.4: a subset is a compaction followed by re-indexing). Components are connected
    through shared vertices, numbered by their first face.
    """,
    kind=OpKind.reindex,
    params=Params,
    numpy=_array,
    cupy=_array,  # flag, compact, re-index: the same array code on CuPy
    attribute_flow=_attributes_after,
    reports="faces_kept, faces_before, vertices_kept",
    test_variants=(
        {},
        {"select": "component", "component": 0},
    ),
)
