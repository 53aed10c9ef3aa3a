"""Graph primitives: connected components (SciPy and array-only), group compaction, row grouping,
CSR building. Checked against brute force on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.engine import graph
from workers.engine.graph import (
    compact_groups,
    connected_components,
    csr_from_pairs,
    group_rows,
    label_propagation,
    ordered_sums,
)

PROPERTY = settings(max_examples=150, deadline=None, database=None, derandomize=True)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 60))
    m = draw(st.integers(0, 2 * n))
    i = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    j = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    return n, np.array(i, dtype=np.int64), np.array(j, dtype=np.int64)


def _union_find(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(i.tolist(), j.tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(x) for x in range(n)], dtype=np.int64)


def _canonical(labels: np.ndarray) -> np.ndarray:
    return compact_groups(np, np.asarray(labels))[0]


# ------------------------------------------------------------------------------ components
@PROPERTY
@given(graphs())
def test_scipy_and_label_propagation_give_the_same_partition(g: tuple) -> None:
    n, i, j = g
    a = connected_components(np, n, i, j)
    b = label_propagation(np, n, i, j)
    assert a.dtype == np.int64 and b.dtype == np.int64
    assert a.shape == b.shape == (n,)
    expect = _canonical(_union_find(n, i, j))
    np.testing.assert_array_equal(_canonical(a), expect)
    np.testing.assert_array_equal(_canonical(b), expect)
    # label propagation labels each node with the smallest node of its component
    np.testing.assert_array_equal(b, _union_find(n, i, j))


@pytest.mark.parametrize("seed", range(5))
def test_large_random_graphs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5000
    m = int(rng.integers(n // 2, 2 * n))
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    np.testing.assert_array_equal(
        _canonical(connected_components(np, n, i, j)), _canonical(label_propagation(np, n, i, j))
    )


def test_long_path_in_reverse_order() -> None:
    n = 2000  # worst case for hooking: every edge joins the two largest roots
    i = np.arange(n - 1, 0, -1)
    b = label_propagation(np, n, i, i - 1)
    np.testing.assert_array_equal(b, np.zeros(n, dtype=np.int64))


def test_isolated_nodes_and_self_loops() -> None:
    i = np.array([2, 3, 3])
    j = np.array([2, 4, 3])
    for f in (connected_components, label_propagation):
        np.testing.assert_array_equal(_canonical(f(np, 6, i, j)), [0, 1, 2, 3, 3, 4])


# ------------------------------------------------------------------------------ compact_groups
def test_compact_groups_numbers_by_first_occurrence() -> None:
    new_id, first = compact_groups(np, np.array([5, 5, 2, 7, 2, 5, -1]))
    np.testing.assert_array_equal(new_id, [0, 0, 1, 2, 1, 0, 3])
    np.testing.assert_array_equal(first, [0, 2, 3, 6])
    assert new_id.dtype == np.int64 and first.dtype == np.int64


def test_compact_groups_empty() -> None:
    new_id, first = compact_groups(np, np.zeros(0, dtype=np.int64))
    assert new_id.shape == first.shape == (0,)


@PROPERTY
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=80))
def test_compact_groups_properties(labels: list[int]) -> None:
    lab = np.array(labels)
    new_id, first = compact_groups(np, lab)
    k = len(set(labels))
    assert first.shape == (k,)
    # same label <=> same group
    assert ((lab[:, None] == lab[None, :]) == (new_id[:, None] == new_id[None, :])).all()
    # first[g] is the smallest element of group g, and groups are numbered in that order
    for g in range(k):
        assert first[g] == np.flatnonzero(new_id == g).min()
    assert (np.diff(first) > 0).all()
    np.testing.assert_array_equal(new_id[first], np.arange(k))


# ------------------------------------------------------------------------------ group_rows
@PROPERTY
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=60
    )
)
def test_group_rows_labels_equal_rows_equally(rows: list[tuple[int, int, int]]) -> None:
    R = np.array(rows, dtype=np.float64)
    lab = group_rows(np, R)
    same_row = (R[:, None, :] == R[None, :, :]).all(axis=2)
    assert (same_row == (lab[:, None] == lab[None, :])).all()
    assert lab.min() == 0 and lab.max() == len(set(rows)) - 1


def test_group_rows_empty() -> None:
    assert group_rows(np, np.zeros((0, 3))).shape == (0,)


# ------------------------------------------------------------------------------ csr_from_pairs
def test_csr_from_pairs_groups_stably() -> None:
    row = np.array([2, 0, 2, 1, 0, 2])
    val = np.array([10, 11, 12, 13, 14, 15])
    off, v, order = csr_from_pairs(np, 4, row, val)
    np.testing.assert_array_equal(off, [0, 2, 3, 6, 6])
    np.testing.assert_array_equal(v, [11, 14, 13, 10, 12, 15])
    np.testing.assert_array_equal(val[order], v)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 7, 5000, 65_536, 65_537, 200_000])
def test_components_on_the_gpu_small_on_the_host_large_by_hooking(n: int) -> None:
    """On CuPy, graphs up to HOST_COMPONENTS_NODES nodes go to SciPy on the host and larger
    ones stay on the device: either way a CuPy int64 array in [0, n) with the exact
    partition."""
    import cupy as cp

    from workers.engine import graph

    rng = np.random.default_rng(n)
    m = n // 2 + 3
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    host = n <= graph.HOST_COMPONENTS_NODES
    got = connected_components(cp, n, cp.asarray(i), cp.asarray(j))
    assert isinstance(got, cp.ndarray) and got.dtype == cp.int64 and got.shape == (n,)
    lab = cp.asnumpy(got)
    assert lab.min() >= 0 and lab.max() < n
    expect = _canonical(connected_components(np, n, i, j))
    np.testing.assert_array_equal(_canonical(lab), expect)
    if not host and n < 100_000:  # hooking labels each node with its component's smallest
        np.testing.assert_array_equal(lab, _union_find(n, i, j))


def test_compact_groups_csr_is_compact_groups_and_its_csr() -> None:
    from workers.engine.graph import compact_groups, compact_groups_csr, csr_from_pairs

    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(0, 400))
        labels = rng.integers(0, int(rng.integers(1, 50)), n) * 7 - 11
        new_id, first = compact_groups(np, labels)
        off, members, _ = csr_from_pairs(np, first.shape[0], new_id, np.arange(n))
        got = compact_groups_csr(np, labels)
        for want, have in zip((new_id, first, off, members), got, strict=True):
            np.testing.assert_array_equal(have, want)


def _smallest_cases() -> list[tuple[str, np.ndarray, int]]:
    rng = np.random.default_rng(4)
    m = 3 * graph.SMALLEST_MIN
    ties = rng.integers(0, 100, m).astype(np.float64)  # every value ~600 times
    spread = rng.random(m)
    with_nan = spread.copy()
    with_nan[rng.integers(0, m, m // 10)] = np.nan
    skewed = np.concatenate([np.zeros(m // 2), rng.random(m - m // 2)])  # half of them tied
    sorted_desc = np.sort(spread)[::-1].copy()
    return [
        ("ties", ties, m // 5),
        ("spread", spread, m // 5),
        ("spread, one", spread, 1),
        ("spread, half", spread, m // 2),
        ("nan", with_nan, m // 3),
        ("skewed", skewed, m // 5),
        ("descending", sorted_desc, m // 5),
        ("small", spread[:1000], 200),
    ]


@pytest.mark.parametrize("case", range(8))
def test_smallest_is_the_stable_sorts_prefix(case: int) -> None:
    name, values, k = _smallest_cases()[case]
    want = np.argsort(values, kind="stable")[:k]
    np.testing.assert_array_equal(graph.smallest(np, values, k), want, err_msg=name)


def test_smallest_falls_back_to_the_full_sort_when_the_sample_misleads() -> None:
    """Values whose evenly spaced sample holds only the smallest: the threshold keeps fewer
    than k, and the full sort answers."""
    m = 2 * graph.SMALLEST_MIN
    values = np.ones(m)
    step = m // graph.SMALLEST_SAMPLE
    values[::step] = 0.0  # the sample sees zeros only
    k = m // 4
    assert int((values <= 0.0).sum()) < k
    np.testing.assert_array_equal(
        graph.smallest(np, values, k), np.argsort(values, kind="stable")[:k]
    )


@pytest.mark.gpu
@pytest.mark.parametrize("case", range(8))
def test_smallest_on_the_gpu_is_the_stable_sorts_prefix(case: int) -> None:
    import cupy as cp

    name, values, k = _smallest_cases()[case]
    want = np.argsort(values, kind="stable")[:k]
    got = cp.asnumpy(graph.smallest(cp, cp.asarray(values), k))
    np.testing.assert_array_equal(got, want, err_msg=name)


def _count_cases() -> list[tuple[str, np.ndarray, int]]:
    rng = np.random.default_rng(7)
    return [
        ("few bins, many values", rng.integers(0, 3, 1_000_003), 5),
        ("one bin", np.zeros(100_001, dtype=np.int64), 1),
        ("many bins", rng.integers(0, 50_000, 300_017), 50_000),
        ("sorted runs", np.repeat(np.arange(997), rng.integers(1, 70, 997)), 997),
        ("shorter than a warp", np.array([4, 4, 1, 0, 4]), 6),
        ("empty", np.zeros(0, dtype=np.int64), 3),
    ]


@pytest.mark.parametrize("case", range(6))
def test_counts_is_bincount(case: int) -> None:
    name, x, n = _count_cases()[case]
    got = graph.counts(np, x, n)
    np.testing.assert_array_equal(got, np.bincount(x, minlength=n), err_msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize("case", range(6))
def test_counts_on_the_gpu_is_bincount(case: int) -> None:
    """The warp-aggregated atomics count every value once, in few bins or many."""
    import cupy as cp

    name, x, n = _count_cases()[case]
    got = cp.asnumpy(graph.counts(cp, cp.asarray(x), n))
    np.testing.assert_array_equal(got, np.bincount(x, minlength=n), err_msg=name)


def _scatter_min_case() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float64 values of both signs, many of them within a float32 rounding of each other, into
    few slots (repeated indices), and a start with infinities and zeros of both signs."""
    rng = np.random.default_rng(11)
    val = rng.normal(size=200_000) * 10.0 ** rng.integers(-12, 12, 200_000)
    val[::7] = 0.5 + rng.integers(0, 50, val[::7].shape[0]) * 1e-12  # float32 cannot tell them
    idx = rng.integers(0, 1000, 200_000)
    out = np.full(1003, np.inf)
    out[::5] = np.resize([-np.inf, 0.0, -0.0, 1e300, -1e-300], out[::5].shape[0])
    return out, idx, val


def test_scatter_min_is_the_smallest_per_slot() -> None:
    """Against a per-slot minimum found by sorting (no scatter at all)."""
    out, idx, val = _scatter_min_case()
    want = out.copy()
    o = np.lexsort((val, idx))
    first = np.ones(o.shape[0], dtype=bool)
    first[1:] = idx[o][1:] != idx[o][:-1]
    slot, low = idx[o][first], val[o][first]
    want[slot] = np.minimum(want[slot], low)
    graph.scatter_min(np, out, idx, val)
    np.testing.assert_array_equal(out, want)


@pytest.mark.gpu
def test_scatter_min_on_the_gpu_keeps_float64_exact() -> None:
    """The GPU's float64 scatter-min equals NumPy's bit for bit (CuPy's own rounded to float32),
    and an integer one is unchanged."""
    import cupy as cp

    out, idx, val = _scatter_min_case()
    want = out.copy()
    np.minimum.at(want, idx, val)
    got = cp.asarray(out)
    graph.scatter_min(cp, got, cp.asarray(idx), cp.asarray(val))
    np.testing.assert_array_equal(cp.asnumpy(got), want)
    ints = cp.full(1000, 1 << 40, dtype=cp.int64)
    graph.scatter_min(cp, ints, cp.asarray(idx), cp.asarray(np.arange(200_000) - 7))
    want_i = np.full(1000, 1 << 40, dtype=np.int64)
    np.minimum.at(want_i, idx, np.arange(200_000) - 7)
    np.testing.assert_array_equal(cp.asnumpy(ints), want_i)


N_ENDS = 5000


def _ends_case(share: float, dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random edges over :data:`N_ENDS` vertices, a ``share`` of them flagged, and the flagged
    edges' ends found one edge at a time."""
    rng = np.random.default_rng(3)
    EV = rng.integers(0, N_ENDS, (20_000, 2)).astype(dtype)
    flag = rng.random(20_000) < share
    want = np.zeros(N_ENDS, dtype=bool)
    for (u, v), f in zip(EV.tolist(), flag.tolist(), strict=True):
        if f:
            want[u] = want[v] = True
    return EV, flag, want


@pytest.mark.parametrize("share", [0.0, 0.01, 0.5, 1.0])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_ends_of_marks_the_flagged_edges_ends(share: float, dtype: type) -> None:
    EV, flag, want = _ends_case(share, dtype)
    np.testing.assert_array_equal(graph.ends_of(np, EV, flag, N_ENDS), want)


@pytest.mark.gpu
@pytest.mark.parametrize("share", [0.0, 0.01, 0.5, 1.0])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_ends_of_on_the_gpu_marks_the_flagged_edges_ends(share: float, dtype: type) -> None:
    import cupy as cp

    EV, flag, want = _ends_case(share, dtype)
    got = graph.ends_of(cp, cp.asarray(EV), cp.asarray(flag), N_ENDS)
    assert got.dtype == cp.bool_ and got.shape == (N_ENDS,)
    np.testing.assert_array_equal(cp.asnumpy(got), want)


def _sum_cases() -> list[tuple[np.ndarray, np.ndarray, int, int]]:
    """``(idx, values, n, per)``: values of many magnitudes (their sums depend on the order),
    rows hit many times, rows never hit, one column and several, one value per entry and one
    per three entries."""
    rng = np.random.default_rng(5)
    m, n = 3000, 400
    idx = rng.integers(0, n - 7, m)  # the last rows get nothing
    big = rng.normal(size=(m, 4)) * 10.0 ** rng.integers(-12, 12, (m, 1))
    return [(idx, big[:, 0], n, 1), (idx, big, n, 1), (idx, big[: m // 3, :3], n, 3)]


@pytest.mark.parametrize("case", range(3))
def test_ordered_sums_add_in_the_order_of_the_entries(case: int) -> None:
    """On the host :func:`ordered_sums` is bincounts, which add in the entries' order: the
    same sums as adding one entry after another; empty input gives zero rows."""
    idx, values, n, per = _sum_cases()[case]
    got = ordered_sums(np, idx, values, n, per)
    want = np.zeros((n,) + values.shape[1:])
    for k, i in enumerate(idx):
        want[i] += values[k // per]
    np.testing.assert_array_equal(got, want)
    assert (want[-7:] == 0).all() and (want[:-7] != 0).mean() > 0.99
    empty = ordered_sums(np, idx[:0], values[:0], n, per)
    assert empty.shape == want.shape and not empty.any()
    with pytest.raises(ValueError, match="indices for"):
        ordered_sums(np, idx[:-1], values, n, per)


@pytest.mark.gpu
@pytest.mark.parametrize("case", range(3))
def test_ordered_sums_on_the_gpu_equal_the_twin(case: int) -> None:
    """The kernel adds each row's entries in their order, as the twin: bit for bit the same,
    where atomics would differ in the last bits from run to run."""
    import cupy as cp

    idx, values, n, per = _sum_cases()[case]
    want = ordered_sums(np, idx, values, n, per)
    got = ordered_sums(cp, cp.asarray(idx), cp.asarray(values), n, per)
    assert got.shape == want.shape
    np.testing.assert_array_equal(cp.asnumpy(got), want)
    groups = graph.entry_groups(cp, cp.asarray(idx), n)  # the groups given, as tip_quadrics does
    again = ordered_sums(cp, cp.asarray(idx), cp.asarray(values), n, per, groups)
    np.testing.assert_array_equal(cp.asnumpy(again), want)
    empty = ordered_sums(cp, cp.asarray(idx[:0]), cp.asarray(values[:0]), n, per)
    assert empty.shape == want.shape and not cp.asnumpy(empty).any()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-(2**40), 2**40), max_size=60),
    st.sampled_from([np.int64, np.int32, np.uint8, np.bool_, np.float64]),
    st.sampled_from([(-1,), (-1, 3)]),
)
def test_unique_is_numpys_unique(values, dtype, shape) -> None:
    """``graph.unique`` (NumPy's unique without its hashing, for integers) gives ``np.unique``'s
    values and dtype for every integer width, bools, floats (left to ``np.unique``), empty and
    two-dimensional arrays."""
    a = np.asarray(values).astype(dtype)
    if shape == (-1, 3):
        a = a[: len(a) // 3 * 3].reshape(shape)
    got, want = graph.unique(np, a), np.unique(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
