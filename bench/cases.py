"""What each benchmark measures: the operation, the bytes it must move at least, and the CPU
libraries that do the same thing (imported only when present)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Case:
    op: str
    params: dict[str, Any]
    #: fewest bytes through device memory: inputs read once, outputs written once (n: vertices,
    #: m: faces)
    floor_bytes: Callable[[int, int], int]
    libs: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = field(default_factory=dict)
    #: largest face count the NumPy twin and the libraries are timed at (they are slow)
    cpu_max_faces: int = 20_000_000


def _igl() -> Any:
    try:
        import igl
    except ImportError:
        return None
    return igl


def _trimesh(V: np.ndarray, F: np.ndarray) -> Any:
    import trimesh

    return trimesh.Trimesh(V, F, process=False)


def libs_vertex_normals() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.per_vertex_normals(
            V, F, igl.PER_VERTEX_NORMALS_WEIGHTING_TYPE_AREA
        )
    out["trimesh"] = lambda V, F: _trimesh(V, F).vertex_normals
    return out


def libs_face_normals() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.per_face_normals(V, F, np.array([0.0, 0.0, 1.0]))
    out["trimesh"] = lambda V, F: _trimesh(V, F).face_normals
    return out


def libs_gaussian_curvature() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.gaussian_curvature(V, F)
    out["trimesh"] = lambda V, F: _trimesh(V, F).vertex_defects
    return out


def libs_weld() -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    igl = _igl()
    if igl is not None:
        out["libigl"] = lambda V, F: igl.remove_duplicate_vertices(V, F, 0.0)
    out["trimesh"] = lambda V, F: _trimesh(V, F).merge_vertices(merge_tex=True, merge_norm=True)
    return out


def libs_remove_unused() -> dict[str, Callable[..., Any]]:
    igl = _igl()
    return {"libigl": lambda V, F: igl.remove_unreferenced(V, F)} if igl is not None else {}


def libs_stats() -> dict[str, Callable[..., Any]]:
    def tm(V: np.ndarray, F: np.ndarray) -> Any:
        m = _trimesh(V, F)
        return (
            m.euler_number,
            m.is_watertight,
            m.is_winding_consistent,
            m.body_count,
            m.area,
            len(m.edges_unique),
        )

    return {"trimesh": tm}


V12, F12, N12 = 12, 12, 12


def cases() -> list[Case]:
    return [
        Case("face_normals", {}, lambda n, m: V12 * n + F12 * m + N12 * m, libs_face_normals()),
        Case(
            "vertex_normals",
            {"weighting": "area"},
            lambda n, m: V12 * n + F12 * m + N12 * n,
            libs_vertex_normals(),
        ),
        Case(
            "vertex_normals", {"weighting": "angle"}, lambda n, m: V12 * n + F12 * m + N12 * n, {}
        ),
        Case(
            "gaussian_curvature",
            {},
            lambda n, m: V12 * n + F12 * m + 4 * n + 2 * n,
            libs_gaussian_curvature(),
        ),
        Case("weld", {}, lambda n, m: V12 * n + F12 * m + V12 * n + F12 * m, libs_weld()),
        Case(
            "remove_unused_vertices",
            {},
            lambda n, m: V12 * n + 2 * F12 * m + V12 * n,
            libs_remove_unused(),
        ),
        Case("remove_degenerate_faces", {}, lambda n, m: V12 * n + 2 * F12 * m, {}),
        Case("stats", {}, lambda n, m: V12 * n + F12 * m, libs_stats(), cpu_max_faces=5_000_000),
    ]
