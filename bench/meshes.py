"""Benchmark inputs: real meshes subdivided to millions of faces, optionally shuffled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from workers.engine.mesh import TriMesh
from workers.engine.reindex import weld
from workers.engine.topology import Topology


def midpoint_subdivide(mesh: TriMesh) -> TriMesh:
    """One 1→4 midpoint subdivision: a vertex at every edge midpoint, each face split in four
    with its orientation kept. Works on either backend."""
    xp = mesh.xp
    topo = Topology.build(mesh.F, mesh.n_vertices)
    n = mesh.n_vertices
    mid_pos = 0.5 * (mesh.V[topo.EV[:, 0]] + mesh.V[topo.EV[:, 1]])
    V = xp.concatenate([mesh.V, mid_pos.astype(mesh.V.dtype)])
    m = n + (topo.FE // 2)  # midpoint of side k (corner k to corner k+1)
    F = mesh.F
    # the four children of a face next to each other: the input's face order (and locality) kept
    faces = xp.stack(
        [
            xp.stack([F[:, 0], m[:, 0], m[:, 2]], 1),
            xp.stack([F[:, 1], m[:, 1], m[:, 0]], 1),
            xp.stack([F[:, 2], m[:, 2], m[:, 1]], 1),
            xp.stack([m[:, 0], m[:, 1], m[:, 2]], 1),
        ],
        1,
    ).reshape(-1, 3)
    return TriMesh(V, faces.astype(xp.int32))


def shuffled(mesh: TriMesh, seed: int = 0) -> TriMesh:
    """Same surface with vertices and faces in random order (no locality to lean on)."""
    rng = np.random.default_rng(seed)
    xp = mesh.xp
    pv = xp.asarray(rng.permutation(mesh.n_vertices))
    pf = xp.asarray(rng.permutation(mesh.n_faces))
    inv = xp.empty_like(pv)
    inv[pv] = xp.arange(mesh.n_vertices, dtype=pv.dtype)
    return TriMesh(mesh.V[pv], inv[mesh.F[pf]].astype(xp.int32))


def bench_mesh(path: Path, min_faces: int, *, shuffle: bool = False, backend: str = "numpy") -> Any:
    """The mesh at ``path``, welded, then subdivided until it has at least ``min_faces``."""
    mesh, _ = weld(TriMesh.load(path))
    mesh = mesh.to(backend)
    while mesh.n_faces < min_faces:
        mesh = midpoint_subdivide(mesh)
    return shuffled(mesh) if shuffle else mesh
