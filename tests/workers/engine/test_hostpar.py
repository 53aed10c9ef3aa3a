"""The host passes split across threads give what the single NumPy calls give."""

from __future__ import annotations

import numpy as np
import pytest

from workers.engine import hostpar


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 100_003])
def test_spans_cover_the_range_once_in_order(n: int) -> None:
    parts = hostpar.spans(n, min_chunk=10)
    assert parts[0].start == 0 and parts[-1].stop == n
    assert all(a.stop == b.start for a, b in zip(parts, parts[1:], strict=False))
    assert len(parts) <= hostpar.threads()
    if n >= 10 * hostpar.threads():
        assert len(parts) == hostpar.threads()


@pytest.mark.parametrize("where", [None, 0, 4_999, 50_000, 99_999])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_all_finite_finds_one_bad_value_anywhere(where: int | None, bad: float) -> None:
    V = np.random.default_rng(0).normal(size=(100_000 // 3 + 1, 3))
    if where is not None:
        V.reshape(-1)[where] = bad
    assert hostpar.all_finite(V, min_chunk=1000) == bool(np.isfinite(V).all())
    assert hostpar.all_finite(V, min_chunk=1000) == (where is None)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_max_unsigned_is_the_unsigned_views_max(dtype: type) -> None:
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    F = rng.integers(0, min(info.max, 10**6), (40_000, 3)).astype(dtype)
    assert hostpar.max_unsigned(F, min_chunk=1000) == int(F.max())
    F[12_345, 1] = info.max if info.min == 0 else -1  # a negative index is the largest
    want = int(F.reshape(-1).view(np.dtype(f"u{F.dtype.itemsize}")).max())
    assert hostpar.max_unsigned(F, min_chunk=1000) == want
    assert want >= 2 ** (8 * F.dtype.itemsize - 1) - 1
    assert hostpar.max_unsigned(F[:0], min_chunk=1000) == 0


@pytest.mark.parametrize(
    ("src", "dst"),
    [(np.int64, np.int32), (np.uint16, np.int32), (np.float64, np.float32), (np.int32, np.int32)],
)
def test_astype_is_numpys_cast(src: type, dst: type) -> None:
    a = (np.random.default_rng(2).normal(size=(33_333, 3)) * 1000).astype(src)
    got = hostpar.astype(a, dst, min_chunk=1000)
    np.testing.assert_array_equal(got, a.astype(dst))
    assert got.dtype == dst and got.shape == a.shape and got.flags.c_contiguous
    if src is dst:
        assert got is a
    strided = a[::2]  # not contiguous: copied first, same values
    np.testing.assert_array_equal(hostpar.astype(strided, dst, min_chunk=1000), strided.astype(dst))


def _child_casts(conn: object) -> None:
    a = np.arange(40_000, dtype=np.int64)
    ok = bool((hostpar.astype(a, np.int32, min_chunk=1000) == a).all())
    conn.send(ok)  # type: ignore[attr-defined]


def test_the_pool_is_joined_before_a_fork_and_made_again_after() -> None:
    """A fork never happens with the pool's threads alive; the child and the parent each make
    a pool of their own when they next need one."""
    import multiprocessing as mp
    import threading

    hostpar.astype(np.arange(40_000), np.int32, min_chunk=1000)
    assert hostpar.threads() == 1 or hostpar._POOL
    before = threading.active_count()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child_casts, args=(send,))
    child.start()
    assert recv.recv() is True
    child.join(30)
    assert child.exitcode == 0
    assert hostpar._POOL == {}  # joined at the fork
    assert threading.active_count() <= before
    a = np.arange(40_000, dtype=np.int64)
    np.testing.assert_array_equal(hostpar.astype(a, np.int32, min_chunk=1000), a)
