"""Patches (RXMesh, dissertation chapter 4): the mesh cut into small connected pieces that fit in
a GPU block's shared memory, each with its ribbon and a local 16-bit index space.

Patching is Lloyd's k-means on the face graph (faces adjacent through an edge), written once as
array code for NumPy and CuPy:

1. Seeds: one per edge-connected component of faces, the rest spread over the components in
   proportion to their size (``ceil(n_faces / S_p)`` in all), chosen with a seeded generator.
2. Assignment: every seed's patch grows by breadth-first rounds; a face reached by several
   patches in one round takes the smallest patch id (a scatter-min: deterministic, where the
   dissertation's atomic compare-and-swap lets the fastest thread win).
3. Construction: patch sizes by counting, the largest by a reduction.
4. Seed update: inside each patch, rounds from its boundary faces inward; the face reached last
   (smallest id on ties) is the next seed: the patch's centre.
5. Seed addition: every fifth round, each patch larger than ``S_p`` gets a second seed on its
   boundary. Stop when the largest patch has at most ``S_p`` faces. If that has not happened
   after ``max_iterations``, oversized patches are cut along their breadth-first order (a prefix
   of a BFS order is connected), so patching always ends with every patch within bounds.

Jobs patch by space-filling curve instead (:func:`morton_patches`, :data:`RUNTIME_METHOD`): runs
of ``S_p`` faces in Morton order, split into their edge-connected pieces, small pieces merged
into a neighbour while the total fits. On a GPU its pieces come from one kernel (a union-find per
run in shared memory) and the rows below from another (a block per patch gathers, sorts and
de-duplicates its faces, vertices and edges in shared memory): the same arrays as the array
code, bit for bit, in a fraction of the time (bench/RESULTS.md, "Patching at 17.8M faces").

Each patch is then extended by its ribbon: every face, not in the patch, that touches one of the
patch's boundary vertices (vertices shared with faces of other patches). Every face, edge and
vertex is owned by exactly one patch: a face by its patch, a vertex or an edge by the patch of its
lowest-numbered incident face; in that patch its whole one-ring is present (owned or ribbon), so
every first-order query about it can be answered there. Local indices put owned elements first.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from .backend import array_backend, to_numpy, xp_for
from .errors import MeshError
from .graph import (
    compact_groups,
    connected_components,
    expand_counts,
    scatter_add,
    scatter_min,
    unique,
)
from .mesh import TriMesh
from .topology import Topology

#: shared memory a patch's local EV (2 x u16 per edge) and FE (3 x u16 per face) may take
DEFAULT_SHARED_BYTES = 48 * 1024
LOCAL_INDEX_LIMIT = 0xFFFF  # 16-bit local ids; 0xFFFF is reserved as "none"


class PatchingError(MeshError):
    code = "mesh.patching_failed"


@dataclass(eq=False)
class Patches:
    """The patched structure of one mesh (all arrays on the mesh's backend).

    Per patch ``p`` (CSR over patches, owned elements first within each row):
    ``face_offsets/faces``, ``edge_offsets/edges``, ``vertex_offsets/vertices`` global ids;
    ``owned_faces/owned_edges/owned_vertices`` counts; ``local_ev`` (2 per local edge, local
    vertex ids, at ``2 * edge_offsets``) and ``local_fe`` (3 per local face, ``local_edge << 1 |
    orientation``, at ``3 * face_offsets``), both uint16. Per global element: ``face_patch``,
    ``edge_owner``, ``vertex_owner`` and the element's local id in its owner
    (``face_local``, ``edge_local``, ``vertex_local``).
    """

    patch_size: int
    n_patches: int
    face_patch: Any
    face_offsets: Any
    faces: Any
    edge_offsets: Any
    edges: Any
    vertex_offsets: Any
    vertices: Any
    owned_faces: Any
    owned_edges: Any
    owned_vertices: Any
    local_ev: Any
    local_fe: Any
    edge_owner: Any
    vertex_owner: Any
    face_local: Any
    edge_local: Any
    vertex_local: Any
    iterations: int = 0
    seconds: float = 0.0
    #: how faces were grouped ("lloyd" or "morton") and the seconds that grouping took
    method: str = "lloyd"
    partition_seconds: float = 0.0
    fallback_splits: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    #: device copies of the arrays the kernels read (queries.device_arrays fills it once)
    device: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def xp(self) -> ModuleType:
        return xp_for(array_backend(self.face_patch))

    #: the per-patch and per-element arrays above, by name
    ARRAYS = (
        "face_patch",
        "face_offsets",
        "faces",
        "edge_offsets",
        "edges",
        "vertex_offsets",
        "vertices",
        "owned_faces",
        "owned_edges",
        "owned_vertices",
        "local_ev",
        "local_fe",
        "edge_owner",
        "vertex_owner",
        "face_local",
        "edge_local",
        "vertex_local",
    )

    def shared_bytes(self) -> Any:
        """Bytes of local EV + FE per patch (what one block stages in shared memory)."""
        ne = self.edge_offsets[1:] - self.edge_offsets[:-1]
        nf = self.face_offsets[1:] - self.face_offsets[:-1]
        return 4 * ne + 6 * nf

    def summary(self) -> dict[str, Any]:
        xp = self.xp
        owned = to_numpy(self.owned_faces)
        local = to_numpy(self.face_offsets[1:] - self.face_offsets[:-1])
        n_faces = int(owned.sum())
        return {
            "patches": self.n_patches,
            "patch_size_limit": self.patch_size,
            "faces_min": int(owned.min()) if owned.size else 0,
            "faces_mean": float(owned.mean()) if owned.size else 0.0,
            "faces_max": int(owned.max()) if owned.size else 0,
            "ribbon_overhead": float(local.sum() / max(n_faces, 1) - 1.0),
            "shared_bytes_max": int(xp.max(self.shared_bytes())) if self.n_patches else 0,
            "method": self.method,
            "iterations": self.iterations,
            "fallback_splits": self.fallback_splits,
            "seconds": self.seconds,
            "partition_seconds": self.partition_seconds,
        }


# --------------------------------------------------------------------------------- face graph
def face_adjacency(xp: ModuleType, topo: Topology) -> tuple[Any, Any]:
    """Directed face-graph edges ``(src, dst)``, both ways, for faces sharing an edge. Faces around
    a non-manifold edge are chained, which keeps them connected without a clique."""
    s, t = topo.ef_pairs()
    fs, ft = s // 3, t // 3
    keep = fs != ft
    fs, ft = fs[keep], ft[keep]
    return xp.concatenate([fs, ft]), xp.concatenate([ft, fs])


def _grow(xp: ModuleType, label: Any, src: Any, dst: Any) -> Any:
    """Breadth-first growth of labelled faces into unlabelled ones until nothing changes; a face
    reached by several labels in one round takes the smallest."""
    while True:
        frontier = (label[src] >= 0) & (label[dst] < 0)
        if not bool(frontier.any()):
            return label
        prop = xp.full(label.shape[0], np.iinfo(np.int64).max, dtype=xp.int64)
        scatter_min(xp, prop, dst[frontier], label[src[frontier]])
        reached = prop != np.iinfo(np.int64).max
        label = xp.where(reached & (label < 0), prop, label)


def _depth_from_boundary(xp: ModuleType, label: Any, src: Any, dst: Any) -> Any:
    """Rounds from each patch's boundary faces (faces with a neighbour in another patch) inward,
    staying inside the patch; faces never reached (a patch with no boundary) get -1."""
    m = label.shape[0]
    inf = np.iinfo(np.int64).max
    depth = xp.full(m, inf, dtype=xp.int64)
    cross = label[src] != label[dst]
    depth[src[cross]] = 0
    inside = ~cross
    s_in, d_in = src[inside], dst[inside]
    level = 0
    while True:
        front = (depth[s_in] == level) & (depth[d_in] == inf)
        if not bool(front.any()):
            break
        depth[d_in[front]] = level + 1
        level += 1
    return xp.where(depth == inf, -1, depth)


def _first_per_group(xp: ModuleType, group: Any, score: Any, n_groups: int) -> Any:
    """Per group the element with the largest score, smallest index on ties (-1 for empty)."""
    m = group.shape[0]
    idx = xp.arange(m, dtype=xp.int64)
    out = xp.full(n_groups, -1, dtype=xp.int64)
    if m == 0:
        return out
    lo, hi = int(score.min()), int(score.max())
    span = hi - lo + 1
    if n_groups * span * m < 2**62:  # one int64 key: a single (radix) sort on the device
        key = (group.astype(xp.int64) * span + (hi - score.astype(xp.int64))) * m + idx
        order = xp.argsort(key)
    else:
        order = xp.asarray(np.lexsort((to_numpy(idx), -to_numpy(score), to_numpy(group))))
    g = group[order]
    head = xp.ones(m, dtype=bool)
    head[1:] = g[1:] != g[:-1]
    out[g[head]] = order[head]
    return out


def _bfs_split(xp: ModuleType, label: Any, src: Any, dst: Any, limit: int) -> tuple[Any, int]:
    """Cut every patch larger than ``limit`` into pieces of at most ``limit`` faces: breadth-first
    order from the patch's smallest face; the first ``limit`` faces form one piece (a BFS prefix
    is connected), the rest are re-split by components. Returns new labels and the cuts made."""
    cuts = 0
    m = label.shape[0]
    while True:
        sizes = xp.bincount(label, minlength=int(label.max()) + 1)
        big = xp.nonzero(sizes > limit)[0]
        if big.shape[0] == 0:
            return compact_groups(xp, label)[0], cuts
        is_big = xp.zeros(sizes.shape[0], dtype=bool)
        is_big[big] = True
        in_big = is_big[label]
        # BFS order inside the big patches, from each patch's smallest face
        root = xp.full(sizes.shape[0], m, dtype=xp.int64)
        scatter_min(xp, root, label, xp.arange(m, dtype=xp.int64))
        order_key = xp.full(m, -1, dtype=xp.int64)
        order_key[root[big]] = 0
        same = label[src] == label[dst]
        inner = same & in_big[src]
        s_in, d_in = src[inner], dst[inner]
        level = 0
        while True:
            front = (order_key[s_in] == level) & (order_key[d_in] < 0)
            if not bool(front.any()):
                break
            order_key[d_in[front]] = level + 1
            level += 1
        # rank faces in each big patch by (level, face id); the first ``limit`` stay
        faces = xp.nonzero(in_big)[0]
        lv, lb = order_key[faces], label[faces]
        span = level + 2  # order keys run from -1 (unreached) to level
        if (int(sizes.shape[0]) * span) * m < 2**62:  # one int64 key: a single device sort
            o = xp.argsort((lb * span + (lv + 1)) * m + faces)
        else:
            o = xp.asarray(np.lexsort((to_numpy(faces), to_numpy(lv), to_numpy(lb))))
        f_sorted = faces[o]
        l_sorted = label[f_sorted]
        start = xp.ones(f_sorted.shape[0], dtype=bool)
        start[1:] = l_sorted[1:] != l_sorted[:-1]
        pos = xp.arange(f_sorted.shape[0], dtype=xp.int64)
        first_pos = xp.where(start, pos, 0)
        first_pos = _running_max(xp, first_pos)
        rank = pos - first_pos
        rest = f_sorted[rank >= limit]
        new = label.copy()
        # the remainder gets fresh labels by connected components among themselves
        base = int(label.max()) + 1
        r_mask = xp.zeros(m, dtype=bool)
        r_mask[rest] = True
        keep = r_mask[src] & r_mask[dst] & same
        comp = connected_components(xp, m, src[keep], dst[keep])
        new[rest] = base + comp[rest]
        label = compact_groups(xp, new)[0]
        cuts += int(big.shape[0])


def _running_max(xp: ModuleType, a: Any) -> Any:
    """Prefix maximum of non-negative, non-decreasing-where-positive head positions (``a[i]`` is
    ``i`` at a row start, else 0): the last row start at or before each position, found by a
    binary search (CuPy has no ``maximum.accumulate``)."""
    heads = xp.nonzero(a > 0)[0]
    if heads.shape[0] == 0:
        return xp.zeros_like(a)
    idx = xp.searchsorted(heads, xp.arange(a.shape[0]), side="right") - 1
    return xp.where(idx >= 0, heads[xp.maximum(idx, 0)], 0)


def lloyd_patches(
    xp: ModuleType,
    topo: Topology,
    patch_size: int,
    *,
    seed: int = 0,
    max_iterations: int = 100,
    add_every: int = 5,
) -> tuple[Any, int, int]:
    """Face → patch labels (compact, 0..k-1), the iterations run and the fallback cuts made."""
    m = topo.n_faces
    src, dst = face_adjacency(xp, topo)
    # edge-connected components of faces (isolated faces are components of their own)
    comp = connected_components(xp, m, src, dst)
    comp, _ = compact_groups(xp, comp)
    n_comp = int(comp.max()) + 1 if m else 0
    comp_size = to_numpy(xp.bincount(comp, minlength=n_comp))
    total = max(math.ceil(m / patch_size), n_comp)
    extra = np.floor((total - n_comp) * comp_size / max(m, 1)).astype(np.int64)
    per_comp = np.minimum(1 + extra, comp_size)
    rng = np.random.default_rng(seed)
    comp_np = to_numpy(comp)
    order = np.argsort(comp_np, kind="stable")
    starts = np.concatenate([[0], np.cumsum(comp_size)])
    seeds = []
    for c in range(n_comp):  # loop over components, not elements (a handful to thousands)
        members = order[starts[c] : starts[c + 1]]
        seeds.append(rng.choice(members, size=int(per_comp[c]), replace=False))
    seeds_arr = xp.asarray(np.sort(np.concatenate(seeds)) if seeds else np.zeros(0, np.int64))

    label = xp.full(m, -1, dtype=xp.int64)
    it = 0
    for it in range(1, max_iterations + 1):  # noqa: B007  (it is reported)
        label = xp.full(m, -1, dtype=xp.int64)
        label[seeds_arr] = xp.arange(seeds_arr.shape[0], dtype=xp.int64)
        label = _grow(xp, label, src, dst)
        n_patches = int(seeds_arr.shape[0])
        sizes = xp.bincount(label, minlength=n_patches)
        if int(sizes.max()) <= patch_size:
            break
        depth = _depth_from_boundary(xp, label, src, dst)
        centre = _first_per_group(xp, label, depth, n_patches)
        new_seeds = xp.where(centre >= 0, centre, seeds_arr)
        if it % add_every == 0:
            big = sizes > patch_size
            on_boundary = depth == 0
            cand = xp.where(on_boundary & big[label], 1, 0)
            extra_seed = _first_per_group(xp, label, cand, n_patches)
            add = extra_seed[big & (extra_seed >= 0)]
            new_seeds = xp.concatenate([new_seeds, add])
        seeds_arr = unique(xp, new_seeds)
    label, _ = compact_groups(xp, label)
    label, cuts = _bfs_split(xp, label, src, dst, patch_size)
    return label, it, cuts


def _spread_bits(xp: ModuleType, x: Any) -> Any:
    """10-bit integers with two zero bits inserted between consecutive bits (int64)."""
    x = x.astype(xp.int64) & 0x3FF
    x = (x | (x << 16)) & 0x30000FF
    x = (x | (x << 8)) & 0x300F00F
    x = (x | (x << 4)) & 0x30C30C3
    x = (x | (x << 2)) & 0x9249249
    return x


def order_by(xp: ModuleType, key: Any, bound: int) -> Any:
    """The permutation that sorts ``key`` (integers in ``[0, bound)``) ascending, ties by index.
    On CuPy, where key and index fit one 63-bit word together, one sort of the packed words:
    1.71 ms against 2.39 ms for ``argsort(key * n + index)`` on 16M keys (H100,
    ``bench.patching_profile``)."""
    n = int(key.shape[0])
    bits = max(n - 1, 1).bit_length()
    if xp.__name__ == "cupy" and max(bound - 1, 1).bit_length() + bits <= 63:
        packed = (key.astype(xp.int64) << bits) | xp.arange(n, dtype=xp.int64)
        return xp.sort(packed) & ((1 << bits) - 1)
    return xp.argsort(key, kind="stable")


def morton_rank(xp: ModuleType, mesh: TriMesh) -> tuple[Any, Any]:
    """``(order, rank)`` of the faces along a Z-order curve: sorted by the Morton code of their
    centroid (1024 cells per axis of the bounding box of the centroids), ties by face id. On
    CuPy two kernels (:func:`_morton_keys_device`), the same codes bit for bit."""
    m = mesh.n_faces
    if xp.__name__ == "cupy" and 0 < m < 2**31 - 1:
        order = xp.sort(_morton_keys_device(mesh)) & ((1 << _index_bits(m)) - 1)
    else:
        V = mesh.V.astype(xp.float32)
        F = mesh.F
        # per axis, as 1-D arrays: CuPy reduces an (m, 3) array along its long axis with a
        # block per column (66 ms at 17.8M faces), a 1-D array with all of the GPU
        c = [(V[F[:, 0], j] + V[F[:, 1], j] + V[F[:, 2], j]) / xp.float32(3.0) for j in range(3)]
        lo = [cj.min() for cj in c]
        scale = _morton_scale(max(float(cj.max() - lj) for cj, lj in zip(c, lo, strict=True)))
        code = xp.zeros(m, dtype=xp.int64)
        for j in range(3):
            q = xp.clip(xp.floor((c[j] - lo[j]) * scale), 0, 1023).astype(xp.int64)
            code |= _spread_bits(xp, q) << (2 - j)
        order = order_by(xp, code, 1 << 30)
    rank = xp.empty(m, dtype=xp.int64)
    rank[order] = xp.arange(m, dtype=xp.int64)
    return order, rank


def _morton_scale(extent: float) -> float:
    return 1023.0 / extent if extent > 0 else 0.0


def _index_bits(m: int) -> int:
    return max(m - 1, 1).bit_length()


def _morton_keys_device(mesh: TriMesh) -> Any:
    """Per face, its Morton code shifted above its id (the words :func:`order_by` sorts), from
    two kernels (``kernels/patching.cu``): the centroids (float32, summed and divided as the
    array code does), then, with the bounding box from six 1-D reductions, the codes. The
    array code takes a dozen element-wise int64 passes over the faces for the same words."""
    import cupy as cp

    from .kernels.loader import load_kernel

    m = mesh.n_faces
    V = cp.ascontiguousarray(mesh.V, dtype=cp.float32)
    F = cp.ascontiguousarray(mesh.F, dtype=cp.int32)
    c = cp.empty((3, m), dtype=cp.float32)
    grid = ((m + 255) // 256,)
    load_kernel("patching", "face_centroids")(grid, (256,), (V, F, np.int64(m), c))
    # per row (1-D reductions: see morton_rank), one transfer
    lo, hi = cp.stack([cp.stack([f(c[j]) for j in range(3)]) for f in (cp.min, cp.max)]).get()
    scale = _morton_scale(max(float(h - low) for h, low in zip(hi, lo, strict=True)))
    keys = cp.empty(m, dtype=cp.int64)
    bounds = tuple(np.float32(x) for x in lo)
    args = (c, np.int64(m), *bounds, np.float32(scale), np.int32(_index_bits(m)), keys)
    load_kernel("patching", "morton_keys")(grid, (256,), args)
    return keys


def morton_patches(xp: ModuleType, mesh: TriMesh, patch_size: int) -> tuple[Any, int, int]:
    """Face → patch labels by space-filling curve: faces in Morton order (:func:`morton_rank`)
    cut into runs of ``patch_size``, each run split into its edge-connected pieces (a run of a
    Z-order curve may touch several pieces of surface), then small pieces merged into a
    neighbour (:func:`_merge_pieces`). No piece ever exceeds ``patch_size``, so nothing is cut
    afterwards. Patches are numbered in Morton order of their first face. No iteration over
    rings, hence fast (and on a GPU two kernels, :func:`_run_roots`); patches are less round
    than Lloyd's (more ribbon). Returns labels, the pieces merged, 0 and each patch's number of
    faces."""
    m = mesh.n_faces
    if m == 0:
        return xp.zeros(0, dtype=xp.int64), 0, 0, xp.zeros(0, dtype=xp.int64)
    order, rank = morton_rank(xp, mesh)
    root, size_at = _run_roots(xp, mesh, order, rank, patch_size)  # per Morton position
    is_root = root == xp.arange(m, dtype=xp.int64)
    piece_of_pos = xp.cumsum(is_root) - 1
    label = xp.empty(m, dtype=xp.int64)
    label[order] = piece_of_pos[root]
    first = xp.nonzero(is_root)[0]  # each piece's first Morton position, ascending
    sizes = xp.bincount(label, minlength=first.shape[0]) if size_at is None else size_at[first]
    # merging works on pieces: the pairs of different pieces across an edge that leave a small
    # piece (pieces only grow, so the small ones of later rounds are among these; a pair
    # within one piece never merges anything, and most pairs are such)
    pa, pb = _piece_pairs(xp, mesh.topology, label)
    leaving = (sizes < patch_size // 4)[pa]
    piece, merges, sizes = _merge_pieces(xp, sizes, pa[leaving], pb[leaving], patch_size)
    return piece[label], merges, 0, sizes


def _piece_pairs(xp: ModuleType, topo: Topology, label: Any) -> tuple[Any, Any]:
    """``(a, b)``: the pieces of the faces of :func:`face_adjacency`'s pairs where they differ,
    both ways."""
    s, t = topo.ef_pairs()
    a, b = label[s // 3], label[t // 3]
    keep = a != b
    a, b = a[keep], b[keep]
    return xp.concatenate([a, b]), xp.concatenate([b, a])


#: rounds of merging pieces below a quarter of the patch size into a neighbour (Morton patching)
MERGE_ROUNDS = 3
#: run lengths the GPU's run kernel takes (one block per run, a union-find in shared memory)
RUN_KERNEL_MAX = 4096


def _run_roots(xp: ModuleType, mesh: TriMesh, order: Any, rank: Any, size: int) -> tuple[Any, Any]:
    """Per Morton position, the position of the first face of its piece: faces joined through
    the face graph (:func:`face_adjacency`; the kernel walks the same pairs in the topology)
    only within their run of ``size`` positions. With it, from the kernel, per position the
    number of faces of the piece whose first position it is (other positions unset), or None
    (the array code: the caller counts the labels)."""
    topo = mesh.topology
    m = mesh.n_faces
    if xp.__name__ == "cupy" and size <= RUN_KERNEL_MAX and 3 * m < 2**31:
        from .kernels.loader import load_kernel

        cp = xp
        root = cp.empty(m, dtype=cp.int64)
        size_at = cp.empty(m, dtype=cp.int64)
        kern = load_kernel("patching", "run_pieces")
        runs = (m + size - 1) // size
        i32 = cp.int32
        kern(
            (runs,),
            (min(256, -(-size // 32) * 32),),
            (
                order,
                cp.ascontiguousarray(rank, dtype=i32),
                cp.int64(m),
                i32(size),
                cp.ascontiguousarray(topo.FE, dtype=i32),
                cp.ascontiguousarray(topo.ef_offsets, dtype=i32),
                cp.ascontiguousarray(topo.ef_sides, dtype=i32),
                root,
                size_at,
            ),
            shared_mem=8 * size,
        )
        return root, size_at
    src, dst = face_adjacency(xp, topo)
    run = rank // size
    same = run[src] == run[dst]
    comp = connected_components(xp, m, src[same], dst[same])
    first = xp.full(m, m, dtype=xp.int64)
    scatter_min(xp, first, comp, rank)
    return first[comp][order], None


def _merge_pieces(xp: ModuleType, sizes: Any, a: Any, b: Any, limit: int) -> tuple[Any, int, Any]:
    """Merge small pieces into their neighbours: pieces numbered in the order of their first
    Morton position with ``sizes`` faces each, ``a[i]`` and ``b[i]`` pieces that share an edge.
    Each of :data:`MERGE_ROUNDS` rounds: every piece of fewer than
    ``limit // 4`` faces picks the smallest-numbered neighbouring piece of at least that size
    with which it fits ``limit``; the pieces that picked one piece join it in the order of their
    numbers while the total fits (the rest wait for the next round). Pieces stay connected (they
    join across an edge a piece that does not move) and within ``limit``; merged pieces are
    numbered by their first position. Returns each piece's merged piece, the pieces merged and
    the merged pieces' sizes.

    Written for the GPU without host round trips: a merged piece goes by the smallest number
    among its pieces (whose order is the order of the first positions), so every round works on
    arrays over the first pieces, with masks instead of compaction, and the numbering is made
    once at the end (one transfer for the whole merge; a round with nothing to merge changes
    nothing)."""
    k = int(sizes.shape[0])
    i64 = xp.int64
    ids = xp.arange(k, dtype=i64)
    group = ids.copy()  # each piece's merged piece: the smallest piece number in it
    sizes = sizes.astype(i64)  # by merged piece; 0 where a piece joined another
    alive = xp.ones(k, dtype=bool)
    moved = xp.zeros(1, dtype=i64)
    quarter = limit // 4
    for _ in range(MERGE_ROUNDS):
        ga, gb = group[a], group[b]
        small = alive & (sizes < quarter)
        ok = small[ga] & ~small[gb] & (sizes[ga] + sizes[gb] <= limit)
        target = xp.full(k, k, dtype=i64)
        scatter_min(xp, target, ga, xp.where(ok, gb, k))
        mover = target < k
        # movers by target, then number; each admitted while its target's total fits: its own
        # running total is the sum over movers so far less that of the earlier targets' movers
        o = xp.argsort(xp.where(mover, target, k) * k + ids)
        t = target[o]
        sz = xp.where(mover, sizes, 0)[o]
        per_target = xp.zeros(k + 1, dtype=i64)
        scatter_add(xp, per_target, t, sz)
        earlier = xp.cumsum(per_target) - per_target
        tc = xp.minimum(t, k - 1)
        admit = (t < k) & (sizes[tc] + xp.cumsum(sz) - earlier[t] <= limit)
        new = ids.copy()
        scatter_min(xp, new, xp.where(admit, tc, 0), xp.where(admit, o, k))
        new[o] = xp.where(admit, new[tc], new[o])
        group = new[group]
        merged_sizes = xp.zeros(k, dtype=i64)
        scatter_add(xp, merged_sizes, new, sizes)
        sizes = merged_sizes
        alive &= new == ids
        moved += admit.sum()
    number = xp.cumsum(alive) - 1
    n_pieces, merges = (int(x) for x in xp.concatenate([number[-1:] + 1, moved]).tolist())
    out = xp.zeros(n_pieces + 1, dtype=i64)
    out[xp.where(alive, number, n_pieces)] = sizes
    return number[group], merges, out[:n_pieces]


# --------------------------------------------------------------------------------- structure
def _pairs_unique(xp: ModuleType, p: Any, g: Any, n_g: int) -> tuple[Any, Any]:
    key = unique(xp, p.astype(xp.int64) * n_g + g.astype(xp.int64))
    return key // n_g, key % n_g


def _csr_owned_first(
    xp: ModuleType, p: Any, g: Any, owner: Any, n_patches: int
) -> tuple[Any, Any, Any, Any]:
    """Rows per patch of global ids, owned ones first (then by id). Returns offsets, ids,
    owned counts and the patch of each entry."""
    not_owned = (owner[g] != p).astype(xp.int64)
    n_g = int(g.max()) + 1 if g.shape[0] else 1
    if (2 * n_patches + 2) * n_g < 2**62:  # one int64 key: a single sort on the device
        o = xp.argsort((p.astype(xp.int64) * 2 + not_owned) * n_g + g.astype(xp.int64))
    else:
        o = xp.asarray(np.lexsort((to_numpy(g), to_numpy(not_owned), to_numpy(p))))
    p, g, not_owned = p[o], g[o], not_owned[o]
    counts = xp.bincount(p, minlength=n_patches)
    offsets = xp.zeros(n_patches + 1, dtype=xp.int64)
    offsets[1:] = xp.cumsum(counts)
    owned = xp.bincount(p[not_owned == 0], minlength=n_patches)
    return offsets, g, owned, p


def _local_lookup(xp: ModuleType, p: Any, g: Any, offsets: Any, n_g: int) -> Any:
    """A function from (patch, global id) pairs to local ids within that patch's row."""
    key = p * n_g + g
    order = xp.argsort(key)
    skey = key[order]
    local = xp.arange(key.shape[0], dtype=xp.int64) - offsets[p]
    slocal = local[order]

    def lookup(pp: Any, gg: Any) -> Any:
        k = pp.astype(xp.int64) * n_g + gg.astype(xp.int64)
        i = xp.searchsorted(skey, k)
        i = xp.minimum(i, skey.shape[0] - 1)
        if not bool((skey[i] == k).all()):
            raise PatchingError("patch structure is inconsistent", code="mesh.patching_failed")
        return slocal[i]

    return lookup


def build_patches(
    mesh: TriMesh,
    patch_size: int = 512,
    *,
    seed: int = 0,
    max_iterations: int = 100,
    shared_bytes: int = DEFAULT_SHARED_BYTES,
    method: str = "lloyd",
) -> Patches:
    """Patch ``mesh``; see the module docstring. Raises :class:`PatchingError` when a patch
    cannot fit the local index space even at the smallest patch size (the caller falls back to
    unpatched kernels)."""
    if patch_size < 1:
        raise ValueError("patch_size must be positive")
    t0 = time.perf_counter()
    xp = mesh.xp
    _check_valence(mesh, shared_bytes)
    topo = mesh.topology
    m = mesh.n_faces
    sizes = None  # faces per patch, where the partition counted them
    if method == "morton":
        label, iterations, cuts, sizes = morton_patches(xp, mesh, patch_size)
    elif method == "lloyd":
        label, iterations, cuts = lloyd_patches(
            xp, topo, patch_size, seed=seed, max_iterations=max_iterations
        )
    else:
        raise ValueError(f"unknown patching method {method!r}")
    t_partition = time.perf_counter() - t0
    if sizes is None:
        sizes = xp.bincount(label) if m else xp.zeros(0, dtype=xp.int64)
    k = int(sizes.shape[0])

    on_device = xp.__name__ == "cupy" and ROWS_ON_DEVICE
    rows = _rows_device(mesh, label, k, sizes) if on_device else None
    if rows is None:
        rows = _rows(xp, mesh, label, k)
    too_big = rows.pop("too_big")
    patches = Patches(
        patch_size=patch_size,
        n_patches=k,
        face_patch=label,
        iterations=iterations,
        fallback_splits=cuts,
        **rows,
    )
    patches.seconds = time.perf_counter() - t0
    patches.method = method
    patches.partition_seconds = t_partition
    patches.stats = patches.summary()
    if too_big or patches.stats["shared_bytes_max"] > shared_bytes:
        raise PatchingError(
            "patches do not fit the shared-memory budget",
            code="mesh.patching_failed",
            patch_size=patch_size,
            shared_bytes=shared_bytes,
        )
    return patches


def _owners(xp: ModuleType, topo: Topology, label: Any) -> tuple[Any, Any, Any]:
    """``(vertex_owner, edge_owner, used)``: a vertex and an edge belong to the patch of their
    first (lowest-numbered) face, the first entry of their row in VF and EF (rows ascend);
    an unused vertex has owner -1."""
    vf_off, vf_faces = topo.vf()
    used = vf_off[1:] > vf_off[:-1]
    if vf_faces.shape[0]:  # no mask: an unused vertex reads some row's face, then -1
        first = vf_faces[xp.minimum(vf_off[:-1], vf_faces.shape[0] - 1)]
        vertex_owner = xp.where(used, label[first].astype(xp.int64), -1)
    else:
        vertex_owner = xp.full(used.shape[0], -1, dtype=xp.int64)
    edge_owner = label[topo.ef_sides[topo.ef_offsets[:-1]] // 3].astype(xp.int64)
    return vertex_owner, edge_owner, used


def _rows(xp: ModuleType, mesh: TriMesh, label: Any, k: int) -> dict[str, Any]:
    """The patches' rows (see :class:`Patches`) as array code, for NumPy and CuPy: ownership,
    ribbons, owned-first CSR rows by sorts, local ids by binary search. ``too_big`` says whether
    a row exceeds the 16-bit local index space."""
    topo = mesh.topology
    m, n, ne = mesh.n_faces, mesh.n_vertices, topo.n_edges
    F = mesh.F.astype(xp.int64)
    E = topo.FE.astype(xp.int64) // 2
    vertex_owner, edge_owner, used = _owners(xp, topo, label)

    # boundary vertices of each patch: vertices whose faces lie in more than one patch
    vp_v, vp_p = _pairs_unique(xp, F.ravel(), xp.repeat(label, 3), k)
    n_patches_of_v = xp.bincount(vp_v, minlength=n)
    bnd = n_patches_of_v[vp_v] > 1
    bv, bp = vp_v[bnd], vp_p[bnd]
    # ribbon: every face around a boundary vertex belongs to that patch's local faces
    vf_off, vf_faces = topo.vf()
    cnt = vf_off[bv + 1] - vf_off[bv]
    owner_idx = expand_counts(xp, cnt)
    slot = xp.arange(owner_idx.shape[0], dtype=xp.int64) - (xp.cumsum(cnt) - cnt)[owner_idx]
    rib_f = vf_faces[vf_off[bv][owner_idx] + slot]
    rib_p = bp[owner_idx]
    fp = xp.concatenate([label, rib_p])
    ff = xp.concatenate([xp.arange(m, dtype=xp.int64), rib_f])
    fp, ff = _pairs_unique(xp, fp, ff, m)
    face_offsets, faces, owned_faces, face_row_p = _csr_owned_first(xp, fp, ff, label, k)

    # local vertices and edges: everything the local faces touch
    lv_p, lv_v = _pairs_unique(xp, xp.repeat(face_row_p, 3), F[faces].ravel(), n)
    vertex_offsets, vertices, owned_vertices, v_row_p = _csr_owned_first(
        xp, lv_p, lv_v, vertex_owner, k
    )
    le_p, le_e = _pairs_unique(xp, xp.repeat(face_row_p, 3), E[faces].ravel(), ne)
    edge_offsets, edges, owned_edges, e_row_p = _csr_owned_first(xp, le_p, le_e, edge_owner, k)

    v_lookup = _local_lookup(xp, v_row_p, vertices, vertex_offsets, n)
    e_lookup = _local_lookup(xp, e_row_p, edges, edge_offsets, ne)
    f_lookup = _local_lookup(xp, face_row_p, faces, face_offsets, m)
    n_local = xp.maximum(
        xp.maximum(xp.diff(vertex_offsets), xp.diff(edge_offsets)), xp.diff(face_offsets)
    )
    too_big = int(n_local.max()) >= LOCAL_INDEX_LIMIT if k else False
    local_ev = (
        xp.stack([v_lookup(e_row_p, topo.EV[edges, 0]), v_lookup(e_row_p, topo.EV[edges, 1])], 1)
        .ravel()
        .astype(xp.uint16)
    )
    fe = topo.FE[faces].astype(xp.int64)
    le = e_lookup(xp.repeat(face_row_p, 3), (fe // 2).ravel()).reshape(-1, 3)
    local_fe = ((le << 1) | (fe & 1)).ravel().astype(xp.uint16)

    return {
        "face_offsets": face_offsets,
        "faces": faces,
        "edge_offsets": edge_offsets,
        "edges": edges,
        "vertex_offsets": vertex_offsets,
        "vertices": vertices,
        "owned_faces": owned_faces,
        "owned_edges": owned_edges,
        "owned_vertices": owned_vertices,
        "local_ev": local_ev,
        "local_fe": local_fe,
        "edge_owner": edge_owner,
        "vertex_owner": vertex_owner,
        "face_local": f_lookup(label, xp.arange(m, dtype=xp.int64)),
        "edge_local": e_lookup(edge_owner, xp.arange(ne, dtype=xp.int64)),
        "vertex_local": _owner_local(xp, v_lookup, vertex_owner, used),
        "too_big": too_big,
    }


#: the GPU builds the rows with the patch_rows kernel (False: the array code, as on NumPy)
ROWS_ON_DEVICE = True
#: shared-memory buffers of patch_rows: local faces, vertices and edges of one patch (a patch
#: with more, or with over a third of CAP_V owned faces, has its rows built by the array code)
ROW_CAP = {"CAP_F": 4096, "CAP_V": 4096, "CAP_E": 4096}
ROW_THREADS = 512
#: the row pools of patch_rows, in multiples of the faces, vertices and edges (32-bit ids) and of
#: the corners and edge ends (16-bit local ids), tried in turn while the rows do not fit: the rows
#: of 512-face Morton patches take 1.0-1.6x on the shared meshes, of 64-face Lloyd patches up to
#: 2.4x, of 16-face Morton patches up to 4.2x (rx-dragon); past the last the array code runs
ROW_POOL = (1.75, 4.5)


def _rows_device(mesh: TriMesh, label: Any, k: int, sizes: Any) -> dict[str, Any] | None:
    """:func:`_rows` on a GPU, the same arrays: one block per patch gathers, sorts and
    de-duplicates its rows in shared memory and writes them to a pool, each patch where an
    atomic counter puts it; a second kernel copies them to their offsets in patch order
    (``kernels/patching.cu``). None when some patch overflows the buffers or the pools (the
    caller runs the array code). ``sizes``: each patch's number of faces."""
    import cupy as cp

    from .kernels.loader import load_kernel

    topo = mesh.topology
    m, n, ne = mesh.n_faces, mesh.n_vertices, topo.n_edges
    if k == 0 or max(3 * m, n, ne) >= 2**31 - 1:
        return None
    i64, i32, u64 = cp.int64, cp.int32, np.uint64
    fsorted = order_by(cp, label, k)  # owned faces by patch, then id
    own_off = cp.zeros(k + 1, dtype=i64)
    own_off[1:] = cp.cumsum(sizes)
    vertex_owner, edge_owner, _ = _owners(cp, topo, label)
    # the gathered index arrays as 32-bit copies (kernels/patching.cu says why)
    vf_off, vf_faces = (cp.ascontiguousarray(a, dtype=i32) for a in topo.vf())
    ef_off = cp.ascontiguousarray(topo.ef_offsets, dtype=i32)
    ef_sides = cp.ascontiguousarray(topo.ef_sides, dtype=i32)
    label32, vo32, eo32 = (
        cp.ascontiguousarray(a, dtype=i32) for a in (label, vertex_owner, edge_owner)
    )
    F = cp.ascontiguousarray(mesh.F, dtype=i32)
    FE = cp.ascontiguousarray(topo.FE, dtype=i32)
    EV = cp.ascontiguousarray(topo.EV, dtype=i32)
    kern = load_kernel("patching", "patch_rows", **ROW_CAP)
    smem = 4 * sum(ROW_CAP.values())
    kern.max_dynamic_shared_size_bytes = smem
    for factor in ROW_POOL:
        counts = cp.zeros((k, 6), dtype=i64)
        base = cp.empty((k, 2), dtype=i64)
        overflow = cp.zeros(1, dtype=i32)
        used = cp.zeros(2, dtype=cp.uint64)  # the pools' fill
        cap32, cap16 = int(factor * (m + n + ne)), int(factor * (3 * m + 2 * ne))
        pool = cp.empty(cap32, dtype=cp.uint32)
        pool16 = cp.empty(cap16, dtype=cp.uint16)
        rows = {
            "face_local": cp.empty(m, dtype=i64),
            "vertex_local": cp.full(n, -1, dtype=i64),
            "edge_local": cp.empty(ne, dtype=i64),
        }
        kern(
            (k,),
            (ROW_THREADS,),
            (i64(k), fsorted, own_off, label32, F, FE, EV, vf_off, vf_faces, ef_off, ef_sides)
            + (vo32, eo32, counts, overflow, pool, u64(cap32), used[0:1], pool16)
            + (u64(cap16), used[1:2], base, rows["face_local"], rows["vertex_local"])
            + (rows["edge_local"],),
            shared_mem=smem,
        )
        offsets = cp.zeros((3, k + 1), dtype=i64)
        offsets[:, 1:] = cp.cumsum(counts[:, [0, 2, 4]].T, axis=1)
        flag, n_f, n_v, n_e = (int(x) for x in cp.concatenate([overflow, offsets[:, -1]]).get())
        if flag != 2:
            break
    if flag:
        return None
    face_offsets, vertex_offsets, edge_offsets = offsets[0], offsets[1], offsets[2]
    rows |= {
        "faces": cp.empty(n_f, dtype=i64),
        "vertices": cp.empty(n_v, dtype=i64),
        "edges": cp.empty(n_e, dtype=i64),
        "local_ev": cp.empty(2 * n_e, dtype=cp.uint16),
        "local_fe": cp.empty(3 * n_f, dtype=cp.uint16),
    }
    load_kernel("patching", "copy_rows")(
        (k,),
        (256,),
        (i64(k), counts, base, pool, pool16, face_offsets, vertex_offsets, edge_offsets)
        + (rows["faces"], rows["vertices"], rows["edges"], rows["local_ev"], rows["local_fe"]),
    )
    return rows | {
        "face_offsets": face_offsets,
        "vertex_offsets": vertex_offsets,
        "edge_offsets": edge_offsets,
        "owned_faces": counts[:, 1].copy(),
        "owned_vertices": counts[:, 3].copy(),
        "owned_edges": counts[:, 5].copy(),
        "edge_owner": edge_owner,
        "vertex_owner": vertex_owner,
        "too_big": False,
    }


def _check_valence(mesh: TriMesh, shared_bytes: int) -> None:
    """Whichever patch owns a vertex holds its whole one-ring of faces (and their edges): a vertex
    whose one-ring alone exceeds the budget can fit no patch at any size. Checked before the
    (much longer) patching."""
    if mesh.n_faces == 0:
        return
    off, _ = mesh.topology.vf()  # a row per corner: the vertex's valence (the rows need it too)
    valence = int((off[1:] - off[:-1]).max())
    if 6 * valence + 4 * (2 * valence + 1) > shared_bytes or 3 * valence >= LOCAL_INDEX_LIMIT:
        raise PatchingError(
            "a vertex's one-ring exceeds the shared-memory budget",
            code="mesh.patching_failed",
            valence=valence,
            shared_bytes=shared_bytes,
        )


def patch_mesh(
    mesh: TriMesh,
    patch_size: int | None = None,
    *,
    seed: int = 0,
    shared_bytes: int = DEFAULT_SHARED_BYTES,
    method: str = "lloyd",
) -> Patches | None:
    """Patches for ``mesh`` at ``patch_size`` (default 512), halving the size while a patch does
    not fit the local index space or the shared-memory budget (a vertex of very high valence
    drags its whole one-ring into every ribbon around it). Returns None when even 16-face patches
    do not fit: the caller then runs the unpatched global-memory kernels."""
    size = patch_size or 512
    try:
        _check_valence(mesh, shared_bytes)
    except PatchingError:
        return None
    while size >= 16:
        try:
            return build_patches(mesh, size, seed=seed, shared_bytes=shared_bytes, method=method)
        except PatchingError:
            size //= 2
    return None


def _owner_local(xp: ModuleType, lookup: Any, owner: Any, used: Any) -> Any:
    out = xp.full(owner.shape[0], -1, dtype=xp.int64)
    ids = xp.nonzero(used)[0]
    if ids.shape[0]:
        out[ids] = lookup(owner[ids], ids)
    return out


def validate(patches: Patches, mesh: TriMesh, shared_bytes: int = DEFAULT_SHARED_BYTES) -> None:
    """Check every invariant of the patched structure; raise :class:`PatchingError` naming the
    first one that fails. Runs on host copies (a test and debugging tool, not a hot path).

    1. every face is owned by exactly one patch, and a patch's owned faces are its label's faces;
    2. every patch is edge-connected;
    3. owned elements come first in each row, and the owned counts match the owner arrays;
    4. ribbons are complete: every face around an owned vertex or edge is in the owner's row;
    5. the local EV and FE decode to the global EV and FE (orientation bits included);
    6. each element's local id in its owner points back at it;
    7. local counts fit 16 bits and each patch's EV + FE fit the shared-memory budget.
    """
    P = {k: to_numpy(v) for k, v in vars(patches).items() if not isinstance(v, (int, float, dict))}
    topo = Topology.build(to_numpy(mesh.F), mesh.n_vertices)
    F = to_numpy(mesh.F).astype(np.int64)
    EV, FE = topo.EV.astype(np.int64), topo.FE.astype(np.int64)
    m, n, ne, k = mesh.n_faces, mesh.n_vertices, topo.n_edges, patches.n_patches

    def fail(what: str, **detail: Any) -> None:
        raise PatchingError(
            f"patch invariant violated: {what}", code="mesh.patching_invalid", **detail
        )

    label = P["face_patch"]
    if label.shape != (m,) or (m and (label.min() < 0 or label.max() >= k)):
        fail("face labels out of range")
    rows = {name: np.diff(P[f"{name}_offsets"]) for name in ("face", "edge", "vertex")}
    row_of = {name: np.repeat(np.arange(k), rows[name]) for name in rows}
    # 1. owned faces of each row are exactly the faces with that label
    owned_flag_f = label[P["faces"]] == row_of["face"]
    if not np.array_equal(
        np.bincount(row_of["face"][owned_flag_f], minlength=k), np.bincount(label, minlength=k)
    ):
        fail("owned faces do not match the face labels")
    if np.bincount(P["faces"][owned_flag_f], minlength=m).max(initial=1) != 1 or (
        m and np.bincount(P["faces"][owned_flag_f], minlength=m).min() != 1
    ):
        fail("a face is owned by no patch or by several")
    # 2. connected patches
    src, dst = face_adjacency(np, topo)
    same = label[src] == label[dst]
    comp = connected_components(np, m, src[same], dst[same])
    n_comp = len(unique(np, comp))
    if m and n_comp != k:
        fail("a patch is not connected", components=n_comp, patches=k)
    # 3. owned first, counts
    for name, owner in (("face", label), ("edge", P["edge_owner"]), ("vertex", P["vertex_owner"])):
        ids = P[f"{name}s" if name != "vertex" else "vertices"]
        owned = owner[ids] == row_of[name]
        local = np.arange(ids.shape[0]) - P[f"{name}_offsets"][row_of[name]]
        if np.any(
            owned
            != (local < P[f"owned_{name}s" if name != "vertex" else "owned_vertices"][row_of[name]])
        ):
            fail(f"owned {name}s do not come first in their rows")
    # 4. ribbons complete: (owner patch of v, every face around v) must be a local face pair
    local_face_keys = unique(np, row_of["face"] * m + P["faces"])
    vo = P["vertex_owner"][F.ravel()]
    need = vo * m + np.repeat(np.arange(m), 3)
    if not np.isin(need, local_face_keys).all():
        fail("a ribbon misses a face around an owned vertex")
    eo = P["edge_owner"][FE.ravel() // 2]
    if not np.isin(eo * m + np.repeat(np.arange(m), 3), local_face_keys).all():
        fail("a ribbon misses a face around an owned edge")
    # 5. local EV and FE decode to global
    lev = P["local_ev"].astype(np.int64).reshape(-1, 2)
    vbase = P["vertex_offsets"][row_of["edge"]]
    if not np.array_equal(P["vertices"][vbase[:, None] + lev], EV[P["edges"]]):
        fail("local EV does not match the global EV")
    lfe = P["local_fe"].astype(np.int64).reshape(-1, 3)
    ebase = P["edge_offsets"][row_of["face"]]
    glob_e = P["edges"][ebase[:, None] + (lfe >> 1)]
    if not np.array_equal(2 * glob_e + (lfe & 1), FE[P["faces"]]):
        fail("local FE does not match the global FE")
    # 6. local ids in the owner
    for name, ids_key, owner in (
        ("face", "faces", label),
        ("edge", "edges", P["edge_owner"]),
        ("vertex", "vertices", P["vertex_owner"]),
    ):
        loc = P[f"{name}_local"]
        have = np.nonzero(loc >= 0)[0]
        back = P[ids_key][P[f"{name}_offsets"][owner[have]] + loc[have]]
        if not np.array_equal(back, have):
            fail(f"{name} local ids do not point back at their element")
    used = np.bincount(F.ravel(), minlength=n) > 0
    if not np.array_equal(P["vertex_local"] >= 0, used):
        fail("used vertices without a local id, or unused ones with one")
    # 7. sizes
    if k and max(rows["face"].max(), rows["edge"].max(), rows["vertex"].max()) >= LOCAL_INDEX_LIMIT:
        fail("a patch exceeds the 16-bit local index space")
    if k and (4 * rows["edge"] + 6 * rows["face"]).max() > shared_bytes:
        fail("a patch exceeds the shared-memory budget")
    if ne and P["edge_local"].min() < 0:
        fail("an edge has no owner")


#: how jobs patch meshes: Morton runs take one sort and a bounded component labelling where
#: Lloyd takes tens of rounds per iteration (bench/RESULTS.md, "Patching"); Lloyd's patches
#: are rounder (less ribbon) and stay available through build_patches/patch_mesh
RUNTIME_METHOD = "morton"


def cached_patches(mesh: TriMesh, patch_size: int | None = None) -> Patches | None:
    """:func:`patch_mesh` (with :data:`RUNTIME_METHOD`) once per mesh connectivity and patch
    size, cached on the topology so every later step of a job that keeps the faces reuses it;
    None when the mesh cannot be patched."""
    size = patch_size or 512
    return mesh.topology._memo(  # type: ignore[no-any-return]
        f"patches:{size}", lambda: patch_mesh(mesh, size, method=RUNTIME_METHOD)
    )


def patches_built(mesh: TriMesh) -> Patches | None:
    """The patches some step built for this connectivity, if any (without building them)."""
    topo = mesh._topology
    if topo is None:
        return None
    for key, value in topo._cache.items():
        if key.startswith("patches:") and value is not None:
            return value  # type: ignore[no-any-return]
    return None
