"""The eight first-order queries (VV, VE, VF, EV, EF, FV, FE, FF) as global CSR arrays: from the
topology by key-sort (the unpatched global-memory version, any backend) and from the patches by
one block per patch (``kernels/queries.cu``, GPU). Each row lists global ids; the order inside a
row is not part of the contract.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .errors import KernelError
from .graph import csr_from_pairs, expand_counts
from .mesh import TriMesh
from .patches import Patches

QUERIES = ("VV", "VE", "VF", "EV", "EF", "FV", "FE", "FF")
THREADS = 256


def reference_query(mesh: TriMesh, name: str) -> tuple[Any, Any]:
    """``(offsets (n_rows + 1,), values)`` of query ``name`` from the cached topology."""
    xp = mesh.xp
    topo = mesh.topology
    n, m, ne = mesh.n_vertices, mesh.n_faces, topo.n_edges
    F = mesh.F.astype(xp.int64)
    EV = topo.EV.astype(xp.int64)
    E = topo.FE.astype(xp.int64) // 2
    if name == "EV":
        return xp.arange(0, 2 * ne + 1, 2, dtype=xp.int64), EV.ravel()
    if name == "FE":
        return xp.arange(0, 3 * m + 1, 3, dtype=xp.int64), E.ravel()
    if name == "FV":
        return xp.arange(0, 3 * m + 1, 3, dtype=xp.int64), F.ravel()
    if name == "VV":
        off, val = topo.vv()
        return off, val
    if name == "VF":
        return topo.vf()
    if name == "VE":
        off, val, _ = csr_from_pairs(xp, n, EV.ravel(), xp.repeat(xp.arange(ne), 2))
        return off, val
    if name == "EF":
        return topo.ef_offsets, topo.ef_sides // 3
    if name == "FF":
        return _face_face(xp, mesh)
    raise ValueError(f"unknown query {name!r}")


def _face_face(xp: ModuleType, mesh: TriMesh) -> tuple[Any, Any]:
    """For each face, every face across each of its edges, itself excluded."""
    topo = mesh.topology
    m = mesh.n_faces
    E = (topo.FE.astype(xp.int64) // 2).ravel()  # edge of each side
    cnt = topo.ef_offsets[E + 1] - topo.ef_offsets[E]
    owner = expand_counts(xp, cnt)
    slot = xp.arange(owner.shape[0], dtype=xp.int64) - (xp.cumsum(cnt) - cnt)[owner]
    other = topo.ef_sides[topo.ef_offsets[E[owner]] + slot] // 3
    face = owner // 3
    keep = other != face
    off, val, _ = csr_from_pairs(xp, m, face[keep], other[keep])
    return off, val


def rows_equal(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    """Two CSR results hold the same multiset in every row (host comparison)."""
    from .backend import to_numpy

    (oa, va), (ob, vb) = [
        (to_numpy(o).astype(np.int64), to_numpy(v).astype(np.int64)) for o, v in (a, b)
    ]
    if not np.array_equal(oa, ob):
        return False
    if va.shape != vb.shape:
        return False
    row = np.repeat(np.arange(oa.shape[0] - 1), np.diff(oa))
    return np.array_equal(va[np.lexsort((va, row))], vb[np.lexsort((vb, row))])


# ----------------------------------------------------------------------------- GPU side
def device_arrays(patches: Patches) -> dict[str, Any]:
    """int32/uint16 device copies of the patch arrays the kernels read (cached)."""
    if "face_offsets" in patches.device:
        return patches.device
    from .backend import cupy_module

    cp = cupy_module()
    i32 = {
        k: cp.ascontiguousarray(cp.asarray(getattr(patches, k)), dtype=cp.int32)
        for k in (
            "face_offsets",
            "edge_offsets",
            "vertex_offsets",
            "owned_faces",
            "owned_edges",
            "owned_vertices",
            "faces",
            "edges",
            "vertices",
        )
    }
    u16 = {
        k: cp.ascontiguousarray(cp.asarray(getattr(patches, k)), dtype=cp.uint16)
        for k in ("local_ev", "local_fe")
    }
    u8 = {"all_active": cp.ones(patches.n_patches, dtype=cp.uint8)}
    patches.device.update({**i32, **u16, **u8})
    return patches.device


def smem_bytes(patches: Patches, threads: int = THREADS) -> int:
    """Dynamic shared memory for ``for_each`` on the largest patch (mirrors patched.cuh)."""
    from .backend import to_numpy

    nv = np.diff(to_numpy(patches.vertex_offsets))
    ne = np.diff(to_numpy(patches.edge_offsets))
    nf = np.diff(to_numpy(patches.face_offsets))
    rows = np.maximum(np.maximum(nv, ne), nf)
    n_val = np.maximum(3 * nf, 2 * ne)
    words = ((2 * ne + 3 * nf) * 2 + 3) // 4 + (rows + 1) + rows + (n_val * 2 + 3) // 4 + threads
    return int(4 * words.max()) if words.size else 0


def patch_args(patches: Patches, active: Any = None) -> tuple[Any, ...]:
    """The kernel arguments behind ``PATCH_PARAMS``; ``active`` (uint8 per patch) defaults to
    every patch."""
    d = device_arrays(patches)
    if active is None:
        active = d["all_active"]
    return (
        d["face_offsets"],
        d["edge_offsets"],
        d["vertex_offsets"],
        d["owned_faces"],
        d["owned_edges"],
        d["owned_vertices"],
        d["faces"],
        d["edges"],
        d["vertices"],
        d["local_ev"],
        d["local_fe"],
        active,
    )


def launch_patched(
    kernel: Any,
    patches: Patches,
    extra: tuple[Any, ...],
    *,
    op: str,
    active: Any = None,
    blocks: int | None = None,
) -> None:
    """One block per patch (or ``blocks`` of them, for a kernel that maps blocks to patches
    itself) with the shared memory the largest patch needs."""
    from .kernels.loader import launch_blocks

    blocks = patches.n_patches if blocks is None else blocks
    if patches.n_patches == 0 or blocks == 0:
        return
    smem = smem_bytes(patches)
    if smem > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    launch_blocks(
        kernel, blocks, THREADS, patch_args(patches, active) + extra, op=op, shared_mem=smem
    )


def patched_query(mesh: TriMesh, patches: Patches, name: str) -> tuple[Any, Any]:
    """Query ``name`` answered patch by patch on the GPU, as a global CSR whose row lengths are
    those of :func:`reference_query` (a row of another length counts as an error)."""
    from .kernels.loader import load_kernel

    cp = mesh.xp
    off, _ = reference_query(mesh, name)
    off = cp.ascontiguousarray(off, dtype=cp.int64)
    values = cp.full(int(off[-1]), -1, dtype=cp.int32)
    errors = cp.zeros(1, dtype=cp.int32)
    launch_patched(
        load_kernel("queries", f"query_{name.lower()}"),
        patches,
        (off, values, errors),
        op=f"query_{name}",
    )
    if int(errors[0]):
        raise KernelError(
            "patched query rows have the wrong length",
            op=f"query_{name}",
            kernel=f"query_{name.lower()}",
            rows=int(errors[0]),
        )
    return off, values
