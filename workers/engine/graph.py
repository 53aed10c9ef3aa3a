"""Graph primitives written once for NumPy and CuPy: connected components and group compaction.

Both are the data-parallel building blocks of re-indexing (Wald) and of KEY-WELD: sort, compare
with the predecessor, prefix-sum, scatter.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from .geometry import scatter_rows

#: the NumPy-only fast paths of graph, topology, stats and reindex (counting sorts through SciPy's
#: compiled CSR builder, hashing, shortcuts); off, NumPy runs the code CuPy runs. Tests turn it
#: off to get the reference the fast paths must equal.
NUMPY_FAST = True

INT32_MAX = 2**31 - 1


def numpy_fast(xp: ModuleType) -> bool:
    """Whether ``xp`` is NumPy and its fast paths are on (:data:`NUMPY_FAST`)."""
    return NUMPY_FAST and xp.__name__ == "numpy"


def unique(xp: ModuleType, a: Any) -> Any:
    """The distinct values of ``a``, sorted, flattened: ``xp.unique(a)``. NumPy 2.3 and later
    hash every integer before sorting the distinct ones, which at a million int64 takes 50-150
    times a sort and a compare of neighbours (NumPy 2.4.6 on a 2-core AMD EPYC: 0.65-2.2 s
    against 0.014-0.032 s); integers take that sort here. Other dtypes (NaN's rules) and CuPy
    (a sort already) go to ``xp.unique``."""
    if xp.__name__ != "numpy" or a.dtype.kind not in "iub":
        return xp.unique(a)
    s = xp.sort(a, axis=None)
    if s.shape[0] < 2:
        return s
    keep = xp.empty(s.shape[0], dtype=bool)
    keep[0] = True
    xp.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def connected_components(xp: ModuleType, n: int, i: Any, j: Any) -> Any:
    """Component label (int64, in ``[0, n)``, not compacted) of each of ``n`` nodes joined by the
    undirected edges ``(i[k], j[k])``.

    On NumPy, and on a GPU for graphs of at most :data:`HOST_COMPONENTS_NODES` nodes (copied
    to the host and back), this is SciPy's connected components, whose labels are ``0..k-1``
    numbered by each component's smallest node; elsewhere, min-label hooking with pointer jumping
    (Shiloach–Vishkin style), which needs only gathers, scatter-min and comparisons. The partition
    is the same either way; labels are made canonical by :func:`compact_groups`.
    """
    import numpy as np

    if xp.__name__ == "numpy":
        return scipy_components(n, i, j)[1].astype(np.int64, copy=False)
    if n <= HOST_COMPONENTS_NODES:
        # small graphs: two copies and SciPy's traversal instead of hooking rounds, each of a
        # few launches and a host sync (a 6k-face mesh's repair made nine such calls)
        from .backend import to_numpy

        lab = scipy_components(n, to_numpy(i), to_numpy(j))[1]
        return xp.asarray(lab.astype(np.int64, copy=False))
    return label_propagation(xp, n, i, j)


#: on a GPU, graphs of at most this many nodes get their components on the host (see above)
HOST_COMPONENTS_NODES = 65_536


def scipy_components(n: int, i: Any, j: Any) -> tuple[int, Any]:
    """``(count, labels)`` of SciPy's undirected connected components (NumPy only): labels
    ``0..count-1``, numbered by each component's smallest node.

    With the fast paths on, SciPy's traversal gets the graph and its transpose in CSR form, each
    built by one counting sort (:func:`bucket_sort`) in int32: no COO-to-CSR conversion with its
    sort and duplicate summing, no float64 weights."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as cc

    m = len(i)
    if not NUMPY_FAST or max(n, 2 * m) >= INT32_MAX:
        g = sp.coo_matrix((np.ones(m, dtype=np.int8), (i, j)), shape=(n, n))
        return cc(g, directed=False)  # type: ignore[no-any-return]
    i = np.asarray(i, dtype=np.int32)
    j = np.asarray(j, dtype=np.int32)
    forward = bucket_sort(i, n, j)[:2]
    return csr_components(*forward, *bucket_sort(j, n, i)[:2])


def csr_components(
    indptr: Any, indices: Any, indptr_t: Any = None, indices_t: Any = None
) -> tuple[int, Any]:
    """``(count, labels)`` as :func:`scipy_components` gives them, for a graph in CSR form (int32
    ``indptr``, ``indices``) and its transpose (the graph itself when not given: one that lists
    every edge both ways; self-loops are harmless).

    SciPy's public ``connected_components`` would build the transpose itself (for a symmetric
    matrix, the matrix again); its undirected traversal is called directly with both when it can
    be imported and answers a small known graph right, the public function otherwise."""
    import numpy as np

    n = int(indptr.shape[0]) - 1
    if indptr_t is None:
        indptr_t, indices_t = indptr, indices
    traverse = _undirected_traversal()
    if traverse is not None:
        labels = np.empty(n, dtype=np.int32)
        count = traverse(indices, indptr, indices_t, indptr_t, labels)
        return int(count), labels
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as cc

    weight = np.broadcast_to(np.float64(1.0), indices.shape)
    g = sp.csr_matrix((weight, indices, indptr), shape=(n, n))
    return cc(g, directed=False)  # type: ignore[no-any-return]


_TRAVERSAL: list[Any] = []


def _undirected_traversal() -> Any:
    """SciPy's compiled undirected components traversal ``(indices, indptr, indices_T,
    indptr_T, labels) -> count``, or None where it is missing or answers a known graph wrong
    (checked once)."""
    if not _TRAVERSAL:
        import numpy as np

        found: Any = None
        try:
            from scipy.sparse.csgraph import _traversal

            fn = _traversal._connected_components_undirected
            indptr = np.array([0, 1, 2, 2, 4, 5, 6], dtype=np.int32)
            indices = np.array([3, 4, 0, 5, 1, 3], dtype=np.int32)  # 0-3-5, 1-4, 2
            labels = np.full(6, -1, dtype=np.int32)
            count = fn(indices, indptr, indices, indptr, labels)
            if count == 3 and labels.tolist() == [0, 1, 2, 0, 1, 0]:
                found = fn
        except Exception:  # any failure means: use the public function
            found = None
        _TRAVERSAL.append(found)
    return _TRAVERSAL[0]


def bucket_sort(keys: Any, n_keys: int, values: Any, carry: Any = None) -> tuple[Any, Any, Any]:
    """Stable counting sort on NumPy: ``(offsets (n_keys+1,), values, carry)`` with ``values``
    (and ``carry``, when given) reordered so that their keys ascend, ties in input order.

    ``keys`` (in ``[0, n_keys)``) and ``values`` share one integer type, int32 or int64; ``carry``
    any numeric type. One pass of SciPy's compiled COO-to-CSR conversion, linear in the input:
    several times faster on this host than a comparison sort of the same keys. Falls back to a
    stable argsort where SciPy's compiled helpers cannot be imported."""
    import numpy as np

    m = int(keys.shape[0])
    try:
        from scipy.sparse import _sparsetools
    except ImportError:  # a SciPy without its private helpers
        _sparsetools = None
    if _sparsetools is None:
        offsets, out, order = csr_from_pairs(np, n_keys, keys, values)
        return offsets.astype(keys.dtype), out, None if carry is None else carry[order]
    ax = np.zeros(m, dtype=np.int8) if carry is None else np.ascontiguousarray(carry)
    offsets = np.empty(n_keys + 1, dtype=keys.dtype)
    out_values = np.empty(m, dtype=values.dtype)
    out_carry = np.empty(m, dtype=ax.dtype)
    _sparsetools.coo_tocsr(
        n_keys,
        n_keys,
        m,
        np.ascontiguousarray(keys),
        np.ascontiguousarray(values),
        ax,
        offsets,
        out_values,
        out_carry,
    )
    return offsets, out_values, None if carry is None else out_carry


def label_propagation(xp: ModuleType, n: int, i: Any, j: Any) -> Any:
    """Array-only connected components: hook every edge's larger root under the smaller, then
    jump pointers until every node points at its root; repeat until no edge joins two roots."""
    parent = xp.arange(n, dtype=xp.int64)
    i = xp.asarray(i, dtype=xp.int64)
    j = xp.asarray(j, dtype=xp.int64)
    while True:
        ri, rj = parent[i], parent[j]
        differ = ri != rj
        if not bool(differ.any()):
            return parent
        ri, rj = ri[differ], rj[differ]
        lo, hi = xp.minimum(ri, rj), xp.maximum(ri, rj)
        # scatter-min: each root hi is hooked under the smallest root it meets
        scatter_min(xp, parent, hi, lo)
        while True:
            grand = parent[parent]
            if bool((grand == parent).all()):
                break
            parent = grand


#: flips the 63 low bits of a negative float64's pattern: the signed integers then order as
#: the floats do (:func:`scatter_min`)
_LOW63 = (1 << 63) - 1


def scatter_min(xp: ModuleType, out: Any, idx: Any, val: Any) -> None:
    """``out[idx[k]] = min(out[idx[k]], val[k])`` in place, repeated indices included. ``out``
    must be a 32- or 64-bit type (CuPy refuses int8, bool...).

    On CuPy a float64 ``out`` goes through int64 keys that order as the floats do (the bit
    pattern, its low bits flipped where negative), the same values as NumPy's: CuPy's own
    float64 scatter-min came back rounded to float32 (differences of 3e-8 in sines of angles,
    which made a comparison for equality with the values scattered fail on the GPU only).
    Where they differ: a NaN loses to every number there (NumPy's minimum keeps it), and -0.0
    counts below 0.0."""
    if xp.__name__ == "cupy" and out.dtype == xp.float64:
        key = xp.ascontiguousarray(out).view(xp.int64)
        key = xp.where(key < 0, key ^ _LOW63, key)
        v = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(val, dtype=xp.float64), idx.shape))
        v = v.view(xp.int64)
        scatter_min(xp, key, idx, xp.where(v < 0, v ^ _LOW63, v))
        out[...] = xp.where(key < 0, key ^ _LOW63, key).view(xp.float64)
        return
    at = getattr(xp.minimum, "at", None)
    if at is not None:  # NumPy, and CuPy from version 14
        at(out, idx, val)
    else:
        import cupyx

        cupyx.scatter_min(out, idx, val)


def scatter_add(xp: ModuleType, out: Any, idx: Any, val: Any) -> None:
    """``out[idx[k]] += val[k]`` in place, repeated indices included."""
    at = getattr(xp.add, "at", None)
    if at is not None:  # NumPy, and CuPy from version 14
        at(out, idx, val)
    else:
        import cupyx

        cupyx.scatter_add(out, idx, val)


def counts(xp: ModuleType, x: Any, n: int) -> Any:
    """``(n,) int64``: how often each of ``0..n-1`` occurs in the integer array ``x``, whose values
    the caller knows lie in ``[0, n)`` (``bincount(x, minlength=n)``). On the GPU one atomic add
    per value (``kernels/graph.cu``): ``cupy.bincount`` first brings the smallest and the largest
    value to the host, two synchronisations."""
    if xp.__name__ != "cupy":
        return xp.bincount(x, minlength=n)
    from .kernels.loader import launch, load_kernel

    out = xp.zeros(n, dtype=xp.uint64)
    x = xp.ascontiguousarray(x, dtype=xp.int64)
    k = int(x.shape[0])
    launch(load_kernel("graph", "count_values"), k, (x, xp.int64(k), out), op="counts")
    return out.view(xp.int64)


def ends_of(xp: ModuleType, EV: Any, flag: Any, n: int) -> Any:
    """(n,) bool: the ends of the edges ``EV (e, 2)`` whose ``flag (e,)`` is set. On the GPU,
    without a boolean index (which waits for the device), one kernel thread per edge
    marks a flagged edge's ends (``kernels/graph.cu``): counting every edge's ends into one more
    bin than there are vertices, the unflagged ones into the last, sent millions of atomics to
    that one address (about 4 ms a round at 4.4M faces on an H100)."""
    out = xp.zeros(n, dtype=bool)
    if xp.__name__ != "cupy":
        out[EV[flag].ravel()] = True
        return out
    from .kernels.loader import launch, load_kernel

    k = int(EV.shape[0])
    wide = EV.dtype == xp.int64
    EV = xp.ascontiguousarray(EV, dtype=xp.int64 if wide else xp.int32)
    name = "mark_ends_i64" if wide else "mark_ends_i32"
    args = (EV, xp.ascontiguousarray(flag, dtype=bool), xp.int64(k), out)
    launch(load_kernel("graph", name), k, args, op="ends_of")
    return out


def sums(xp: ModuleType, x: Any, w: Any, n: int) -> Any:
    """``(n,)``: the sum of the weights ``w`` of each of ``0..n-1`` in ``x`` (values in ``[0, n)``),
    ``bincount(x, weights=w, minlength=n)``; on the GPU one atomic add per value, without
    ``cupy.bincount``'s two synchronisations (the sums' order, and so their last bits, is the
    atomics' on both). Where the last bits decide something, :func:`ordered_sums` adds in a
    fixed order at the cost of a sort: the remesher's relaxation stays with this (its GPU runs
    came out the same three times in a row on three shared meshes; with the sort the remesh of
    4.4M faces took 1.76 s against 1.56 s, H200)."""
    if xp.__name__ != "cupy":
        return xp.bincount(x, weights=w, minlength=n)
    out = xp.zeros(n, dtype=xp.float64)
    scatter_add(xp, out, x, w.astype(xp.float64, copy=False))
    return out


def entry_groups(xp: ModuleType, idx: Any, n: int) -> tuple[Any, Any]:
    """``(off (n+1,), entry)``: the positions of the entries of ``idx`` (values in ``[0, n)``)
    grouped by value, each group in the entries' order (a stable sort)."""
    off, _, entry = csr_from_pairs(xp, n, idx, idx)
    return off, entry


def ordered_sums(
    xp: ModuleType, idx: Any, values: Any, n: int, per: int = 1, groups: Any = None
) -> Any:
    """``out[idx[k]] += values[k // per]`` for (m,) indices in ``[0, n)`` and (m / per,) or
    (m / per, d) values: ``(n,)`` or ``(n, d)`` float64, added in the order of ``k`` on both
    backends. NumPy's bincounts add so; on CuPy one thread per row and column adds its group of
    entries (``groups``: :func:`entry_groups` of ``idx``, when the caller has them) in that
    order (``kernels/graph.cu``). The sums are then the same from run to run, which atomics'
    are not (they add in the order the threads come): where the last bits decide something
    (decimation's collapses among tied costs) the same job gave different meshes from run to
    run."""
    if idx.shape[0] != per * values.shape[0]:
        raise ValueError(f"{idx.shape[0]} indices for {values.shape[0]} values, {per} each")
    if xp.__name__ != "cupy":
        return scatter_rows(xp, idx, values if per == 1 else xp.repeat(values, per, axis=0), n)
    from .kernels.loader import launch, load_kernel

    flat = values.ndim == 1
    off, entry = entry_groups(xp, idx, n) if groups is None else groups
    d = 1 if flat else int(values.shape[1])
    V = xp.ascontiguousarray(values.reshape(values.shape[0], d), dtype=xp.float64)
    out = xp.zeros((n, d), dtype=xp.float64)
    args = (V, xp.int64(d), xp.int64(per), off, entry, xp.int64(n), out)
    launch(load_kernel("graph", "ordered_row_sums"), n * d, args, op="sums")
    return out[:, 0] if flat else out


def expand_counts(xp: ModuleType, counts: Any) -> Any:
    """``repeat(arange(len(counts)), counts)`` for an array of counts, on either backend (CuPy's
    ``repeat`` takes counts only as a host list): the owner of each output slot, found by binary
    search of the slot in the inclusive prefix sum."""
    counts = counts.astype(xp.int64)
    total = int(counts.sum()) if counts.shape[0] else 0
    if total == 0:
        return xp.zeros(0, dtype=xp.int64)
    ends = xp.cumsum(counts)
    return xp.searchsorted(ends, xp.arange(total, dtype=xp.int64), side="right")


def _runs(xp: ModuleType, labels: Any) -> tuple[Any, Any, Any, Any, Any]:
    """The stable sort of ``labels`` (n > 0) and its runs of equal labels: ``(order, run,
    starts, perm, rank)``: ``order`` the sort, ``run[i]`` the run of sorted position ``i`` (runs
    in label order), ``starts`` each run's first sorted position, ``perm`` the runs in order of
    first occurrence and ``rank`` its inverse (each run's group number)."""
    order = xp.argsort(labels, kind="stable")
    sl = labels[order]
    head = xp.ones(labels.shape[0], dtype=bool)
    head[1:] = sl[1:] != sl[:-1]
    run = xp.cumsum(head) - 1
    starts = xp.nonzero(head)[0]
    perm = xp.argsort(order[starts])  # stable sort: a run's head is its smallest index
    rank = xp.empty(perm.shape[0], dtype=xp.int64)
    rank[perm] = xp.arange(perm.shape[0], dtype=xp.int64)
    return order, run, starts, perm, rank


def compact_groups(xp: ModuleType, labels: Any) -> tuple[Any, Any]:
    """Renumber arbitrary integer labels to ``0..k-1`` in order of first occurrence.

    Returns ``(new_id (n,) int64, first (k,) int64)``: ``new_id[i]`` is the group of element ``i``
    and ``first[g]`` the smallest element index of group ``g``. Sort, flag heads, scan, scatter.
    """
    n = labels.shape[0]
    if n == 0:
        z = xp.zeros(0, dtype=xp.int64)
        return z, z
    order, run, starts, perm, rank = _runs(xp, labels)
    new_id = xp.empty(n, dtype=xp.int64)
    new_id[order] = rank[run]
    return new_id, order[starts][perm]


def compact_groups_csr(xp: ModuleType, labels: Any) -> tuple[Any, Any, Any, Any]:
    """:func:`compact_groups` and the members of each group: ``(new_id, first, offsets,
    members)``, ``members[offsets[g]:offsets[g + 1]]`` the elements of group ``g`` in index
    order, the same arrays as ``csr_from_pairs(xp, k, new_id, arange(n))[:2]`` but from the one
    sort that finds the groups (no second sort of every element by its new id)."""
    n = labels.shape[0]
    if n == 0:
        z = xp.zeros(0, dtype=xp.int64)
        return z, z, xp.zeros(1, dtype=xp.int64), z
    order, run, starts, perm, rank = _runs(xp, labels)
    new_id = xp.empty(n, dtype=xp.int64)
    new_id[order] = rank[run]
    sizes = xp.diff(xp.concatenate([starts, xp.asarray([n], dtype=starts.dtype)]))
    offsets = xp.zeros(perm.shape[0] + 1, dtype=xp.int64)
    offsets[1:] = xp.cumsum(sizes[perm])
    within = xp.arange(n, dtype=xp.int64) - starts[run]
    members = xp.empty(n, dtype=xp.int64)
    members[offsets[rank[run]] + within] = order
    return new_id, order[starts][perm], offsets, members


#: below this many values :func:`smallest` sorts them all
SMALLEST_MIN = 1 << 16
#: values :func:`smallest` samples for its threshold
SMALLEST_SAMPLE = 4096


def smallest(xp: ModuleType, values: Any, k: int) -> Any:
    """``argsort(values, kind="stable")[:k]``: the indices of the ``k`` smallest values, smallest
    first, ties in index order (NaN last), without sorting all of them when ``k`` is at most half:
    a threshold from an evenly spaced sample, above the ``k``-th smallest with a margin, then a
    stable sort of the values not above it (all of them precede the others in the full sort, so
    its first ``k`` are the same). When fewer than ``k`` values are not above the threshold, the
    full sort."""
    m = int(values.shape[0])
    if m < SMALLEST_MIN or 2 * k > m:
        return xp.argsort(values, kind="stable")[:k]
    step = m // SMALLEST_SAMPLE
    sample = xp.sort(values[::step])
    n_s = int(sample.shape[0])
    q = min(n_s - 1, math.ceil(1.25 * k / m * n_s) + 16)
    sel = xp.nonzero(values <= sample[q])[0]
    if int(sel.shape[0]) < k:
        return xp.argsort(values, kind="stable")[:k]
    return sel[xp.argsort(values[sel], kind="stable")[:k]]


def compact_ordered(labels: Any, n_labels: int) -> tuple[Any, int]:
    """``(compact_groups(labels)[0], count)`` on NumPy for labels in ``[0, n_labels)``, by a
    scatter and a prefix sum instead of a sort when their first occurrences already ascend (as
    SciPy's components, numbered by smallest node, do on any subset of the nodes in order); the
    sort otherwise."""
    import numpy as np

    present = np.zeros(n_labels, dtype=bool)
    present[labels] = True
    rank = np.cumsum(present) - 1
    out = rank[labels]
    if out.shape[0]:
        seen = np.maximum.accumulate(out)  # a new label must be the next one
        if int(out[0]) != 0 or bool((seen[1:] - seen[:-1] > 1).any()):
            new_id, first = compact_groups(np, labels)
            return new_id, int(first.shape[0])
    return out, int(rank[-1]) + 1 if n_labels else 0


def group_rows(xp: ModuleType, rows: Any) -> Any:
    """A label per row of a 2-D array such that equal rows (exact comparison) share a label.

    Lexicographic sort of the rows, flag rows that differ from their predecessor, prefix-sum.
    """
    n = rows.shape[0]
    if n == 0:
        return xp.zeros(0, dtype=xp.int64)
    keys = tuple(rows[:, k] for k in range(rows.shape[1] - 1, -1, -1))
    order = xp.lexsort(xp.stack(keys)) if xp.__name__ != "numpy" else xp.lexsort(keys)
    sr = rows[order]
    head = xp.ones(n, dtype=bool)
    head[1:] = (sr[1:] != sr[:-1]).any(axis=1)
    lab = xp.empty(n, dtype=xp.int64)
    lab[order] = xp.cumsum(head) - 1
    return lab


def csr_from_pairs(xp: ModuleType, n_rows: int, row: Any, val: Any) -> tuple[Any, Any, Any]:
    """CSR arrays ``(offsets (n_rows+1,), values, order)`` grouping ``val`` by ``row``, stable.

    ``order`` is the permutation applied to the input pairs, for carrying extra columns."""
    order = xp.argsort(row, kind="stable")
    offsets = xp.zeros(n_rows + 1, dtype=xp.int64)
    offsets[1:] = xp.cumsum(counts(xp, row, n_rows))
    return offsets, val[order], order
