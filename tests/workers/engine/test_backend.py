"""Backend resolution on the host the tests run on (the GPU suite covers CuPy itself)."""

from __future__ import annotations

import numpy as np
import pytest

from workers.engine import BackendUnavailable, Device, gpu_available
from workers.engine.backend import array_backend, resolve, to_numpy, xp_for
from workers.engine.errors import SpecError


def test_cpu_is_numpy() -> None:
    assert resolve("cpu") == resolve(Device.cpu) == "numpy"
    assert xp_for("numpy") is np


def test_gpu_resolves_or_says_why_not() -> None:
    if gpu_available():
        assert resolve("gpu") == "cupy"
        assert resolve("auto") == "cupy"
    else:
        with pytest.raises(BackendUnavailable) as ei:
            resolve("gpu")
        assert ei.value.code == "backend.unavailable" and ei.value.detail["reason"]
        assert resolve("auto") == "numpy"


def test_unknown_device() -> None:
    with pytest.raises(SpecError, match="tpu") as info:
        resolve("tpu")
    assert info.value.code == "spec.invalid"


def test_numpy_arrays() -> None:
    a = np.arange(3)
    assert array_backend(a) == "numpy" and array_backend([1, 2]) == "numpy"
    assert to_numpy(a) is a
    np.testing.assert_array_equal(to_numpy([1, 2]), [1, 2])


def test_auto_takes_the_cpu_for_small_meshes_where_a_gpu_is(monkeypatch) -> None:
    from workers.engine import backend

    monkeypatch.setattr(backend, "gpu_available", lambda: True)
    small, why = backend.choose("auto", 12, gpu_min_faces=10_000)
    assert small == "numpy" and "12 faces" in why
    assert backend.choose("auto", 10_000, gpu_min_faces=10_000)[0] == "cupy"
    assert backend.choose("auto", 12, gpu_min_faces=0)[0] == "cupy"
    assert backend.choose("cpu", 10**7)[0] == "numpy"


def test_auto_without_a_gpu_is_the_cpu_at_any_size(monkeypatch) -> None:
    from workers.engine import backend

    monkeypatch.setattr(backend, "gpu_available", lambda: False)
    monkeypatch.setattr(backend, "_warned_fallback", True)
    assert backend.choose("auto", 10**8) == ("numpy", "no usable GPU here")


@pytest.mark.gpu
@pytest.mark.parametrize("stage", [1 << 20, 32 << 20])
def test_large_uploads_through_the_pinned_buffers_arrive_whole(
    monkeypatch: pytest.MonkeyPatch, stage: int
) -> None:
    """Arrays past the staging threshold, of several types and sizes that are no multiple of a
    buffer, come out on the device as they went in; work queued before on the device's stream
    does not see them half written."""
    import cupy as cp

    from workers.engine import backend

    monkeypatch.setattr(backend, "STAGE_BYTES", stage)
    monkeypatch.setattr(backend._Staging, "_made", {})
    rng = np.random.default_rng(5)
    for a in (
        rng.normal(size=(2_100_001, 3)),  # 50 MB float64
        rng.integers(-(2**31), 2**31 - 1, (1_400_003, 3)).astype(np.int32),
        rng.integers(0, 255, 17 << 20).astype(np.uint8),
        rng.normal(size=(3_000_000, 3))[::2],  # not contiguous
    ):
        assert a.nbytes >= backend.STAGED_MIN_BYTES
        busy = cp.arange(10_000_000, dtype=cp.float64)
        busy = cp.sqrt(busy * busy + 1.0)  # queued before the copy
        got = backend.to_device(a)
        assert got.dtype == a.dtype and got.shape == a.shape
        np.testing.assert_array_equal(cp.asnumpy(got), a)
        assert float(busy[-1]) > 9e6
    made = list(backend._Staging._made.values())
    assert len(made) == 1 and made[0].size == stage
