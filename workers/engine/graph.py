"""Graph primitives written once for NumPy and CuPy: connected components and group compaction.

Both are the data-parallel building blocks of re-indexing (Wald) and of KEY-WELD: sort, compare
with the predecessor, prefix-sum, scatter.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


def connected_components(xp: ModuleType, n: int, i: Any, j: Any) -> Any:
    """Component label (int64, in ``[0, n)``, not compacted) of each of ``n`` nodes joined by the
    undirected edges ``(i[k], j[k])``.

    On NumPy this is SciPy's union-find; elsewhere, min-label hooking with pointer jumping
    (Shiloach–Vishkin style), which needs only gathers, scatter-min and comparisons. The partition
    is the same either way; labels are made canonical by :func:`compact_groups`.
    """
    if xp.__name__ == "numpy":
        import numpy as np
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components as cc

        g = sp.coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(n, n))
        return cc(g, directed=False)[1].astype(np.int64)
    return label_propagation(xp, n, i, j)


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


def scatter_min(xp: ModuleType, out: Any, idx: Any, val: Any) -> None:
    """``out[idx[k]] = min(out[idx[k]], val[k])`` in place, repeated indices included. ``out``
    must be a 32- or 64-bit type (CuPy refuses int8, bool...)."""
    at = getattr(xp.minimum, "at", None)
    if at is not None:  # NumPy, and CuPy from version 14
        at(out, idx, val)
    else:
        import cupyx

        cupyx.scatter_min(out, idx, val)


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


def compact_groups(xp: ModuleType, labels: Any) -> tuple[Any, Any]:
    """Renumber arbitrary integer labels to ``0..k-1`` in order of first occurrence.

    Returns ``(new_id (n,) int64, first (k,) int64)``: ``new_id[i]`` is the group of element ``i``
    and ``first[g]`` the smallest element index of group ``g``. Sort, flag heads, scan, scatter.
    """
    n = labels.shape[0]
    if n == 0:
        z = xp.zeros(0, dtype=xp.int64)
        return z, z
    order = xp.argsort(labels, kind="stable")
    sl = labels[order]
    head = xp.ones(n, dtype=bool)
    head[1:] = sl[1:] != sl[:-1]
    gid_sorted = xp.cumsum(head) - 1
    first = order[head]  # stable sort: the head of each run is its smallest index
    rank = xp.empty_like(first)
    rank[xp.argsort(first)] = xp.arange(first.shape[0], dtype=xp.int64)
    new_id = xp.empty(n, dtype=xp.int64)
    new_id[order] = rank[gid_sorted]
    return new_id, xp.sort(first)


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
    counts = xp.bincount(row, minlength=n_rows)
    offsets = xp.zeros(n_rows + 1, dtype=xp.int64)
    offsets[1:] = xp.cumsum(counts)
    return offsets, val[order], order
