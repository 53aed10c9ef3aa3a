"""Array backends: NumPy always, CuPy when a GPU is present and asked for.

CuPy is imported only inside :func:`cupy_module`, so importing the engine (the API process does, for
the operation catalogue) never initialises CUDA.
"""

from __future__ import annotations

import logging
import threading
from enum import Enum
from functools import lru_cache
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from .errors import BackendUnavailable, SpecError

log = logging.getLogger(__name__)


class Device(str, Enum):
    """Where a job runs. ``auto`` takes the GPU when one is usable, else the CPU."""

    auto = "auto"
    gpu = "gpu"
    cpu = "cpu"

    @classmethod
    def parse(cls, device: Device | str) -> Device:
        """``device`` as a :class:`Device`; anything else is a :class:`~.errors.SpecError`."""
        try:
            return cls(device)
        except ValueError:
            raise SpecError(
                f"unknown device {device!r}: one of auto, gpu, cpu", device=str(device)
            ) from None


@lru_cache(maxsize=1)
def _probe_cupy() -> tuple[ModuleType | None, str]:
    try:
        import cupy  # noqa: PLC0415  (soft import: only on GPU paths)
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        return None, f"cupy not importable: {exc.__class__.__name__}: {exc}"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"no CUDA device: {exc.__class__.__name__}: {exc}"
    if n < 1:
        return None, "no CUDA device"
    return cupy, ""


def gpu_available() -> bool:
    return _probe_cupy()[0] is not None


def cupy_module() -> ModuleType:
    """Return the ``cupy`` module or raise :class:`BackendUnavailable` with the reason."""
    mod, why = _probe_cupy()
    if mod is None:
        raise BackendUnavailable("GPU backend unavailable", reason=why)
    return mod


_warned_fallback = False


def resolve(device: Device | str) -> str:
    """Map a requested device to the backend that will run: ``"numpy"`` or ``"cupy"``."""
    global _warned_fallback
    device = Device.parse(device)
    if device is Device.cpu:
        return "numpy"
    if device is Device.gpu:
        cupy_module()
        return "cupy"
    if gpu_available():
        return "cupy"
    if not _warned_fallback:
        # no CuPy installed is what a CPU machine looks like: said at INFO; an installed CuPy
        # that cannot run (no device, a broken CUDA) is worth a warning
        level = logging.WARNING if _cupy_installed() else logging.INFO
        log.log(level, "device=auto runs on the CPU: %s", _probe_cupy()[1])
        _warned_fallback = True
    return "numpy"


def _cupy_installed() -> bool:
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec("cupy") is not None


#: below this many faces ``device: auto`` runs on the CPU: a small mesh's operations are each a
#: few kernel launches on the GPU, and launches (about 10 µs each, hundreds per pipeline) cost more
#: than NumPy needs for the whole mesh; the job record says so (``device`` in its fields)
GPU_MIN_FACES = 10_000


def choose(
    device: Device | str, n_faces: int, gpu_min_faces: int = GPU_MIN_FACES
) -> tuple[str, str]:
    """The backend a job on a mesh of ``n_faces`` runs on, and why: ``resolve`` for ``gpu`` and
    ``cpu``; ``auto`` also takes the CPU for meshes under ``gpu_min_faces`` faces."""
    device = Device.parse(device)
    if device is not Device.auto:
        return resolve(device), f"device {device.value} was asked for"
    if not gpu_available():
        return resolve(device), "no usable GPU here"
    if n_faces < gpu_min_faces:
        return "numpy", f"{n_faces} faces: under {gpu_min_faces}, the CPU beats GPU launches"
    return "cupy", f"{n_faces} faces: on the GPU"


def xp_for(backend: str) -> ModuleType:
    return cupy_module() if backend == "cupy" else np


def array_backend(a: Any) -> str:
    """``"cupy"`` for a CuPy array, ``"numpy"`` otherwise, without importing CuPy."""
    return "cupy" if type(a).__module__.startswith("cupy") else "numpy"


def sync(mesh: Any) -> None:
    """Wait until the device work queued on the mesh's arrays is done (a no-op on the CPU), so
    that a host clock read next times it."""
    if mesh.backend == "cupy":
        mesh.xp.cuda.get_current_stream().synchronize()


#: arrays of at least this many bytes go to the device through :class:`_Staging`
STAGED_MIN_BYTES = 16 << 20
#: bytes of each of the two pinned staging buffers
STAGE_BYTES = 32 << 20


class _Staging:
    """Two pinned host buffers of :data:`STAGE_BYTES`, made once per process and device, through
    which a large array goes to the device piece by piece: the host's threads copy one piece into
    a buffer (:mod:`.hostpar`) while the device reads the previous one from the other buffer.

    A copy from pageable memory (``ndarray.set``) runs at what the driver's own staging gives,
    about 6 GB/s on the H100 host (71 ms for the 426 MB of a 17.8M-face mesh); ``cupy.asarray``
    pins a fresh buffer the size of the array first, which cost more than the copy (170 ms for
    320 MB). Fixed buffers are pinned once."""

    _made: ClassVar[dict[tuple[int, int], _Staging]] = {}

    def __init__(self, cp: Any) -> None:
        self.cp = cp
        self.size = STAGE_BYTES
        self.mem = [cp.cuda.alloc_pinned_memory(self.size) for _ in range(2)]
        self.view = [np.frombuffer(m, dtype=np.uint8, count=self.size) for m in self.mem]
        self.done: list[Any] = [None, None]
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.lock = threading.Lock()  # one upload at a time through the buffers

    @classmethod
    def get(cls, cp: Any) -> _Staging | None:
        """This process's buffers on the current device; None where pinned memory cannot be
        had (a locked-memory limit): the caller copies from pageable memory."""
        import os

        key = (os.getpid(), cp.cuda.Device().id)
        made = cls._made.get(key)
        if made is None:
            try:
                made = cls(cp)
            except (cp.cuda.runtime.CUDARuntimeError, MemoryError) as exc:
                log.warning("no pinned staging buffers (%s): uploads from pageable memory", exc)
                return None
            for old in [k for k in cls._made if k[0] != key[0]]:
                del cls._made[old]  # a forked child's copy of its parent's buffers is not its own
            cls._made[key] = made
        return made

    def upload(self, host: np.ndarray, out: Any) -> None:
        with self.lock:
            self._upload(host, out)

    def _upload(self, host: np.ndarray, out: Any) -> None:
        from . import hostpar

        src = host.reshape(-1).view(np.uint8)
        n = int(src.shape[0])
        rt = self.cp.cuda.runtime
        # ``out`` may reuse memory that work queued on the current stream still reads
        self.stream.wait_event(self.cp.cuda.get_current_stream().record())
        for i, start in enumerate(range(0, n, self.size)):
            size = min(self.size, n - start)
            k = i % 2
            if self.done[k] is not None:
                self.done[k].synchronize()  # the device has read this buffer's last piece
            buf, piece = self.view[k], src[start : start + size]

            def copy(s: slice, buf: np.ndarray = buf, piece: np.ndarray = piece) -> None:
                buf[s] = piece[s]

            hostpar.map_spans(copy, size, min_chunk=1 << 20)
            dst = out.data.ptr + start
            rt.memcpyAsync(dst, self.mem[k].ptr, size, rt.memcpyHostToDevice, self.stream.ptr)
            self.done[k] = self.stream.record()
        self.stream.synchronize()


def to_device(a: Any) -> Any:
    """Device copy of a host array. A large one goes through two pinned buffers that the host's
    threads fill while the device reads (:class:`_Staging`); a small one straight from its own
    memory."""
    cp = cupy_module()
    if array_backend(a) == "cupy":
        return a
    host = np.ascontiguousarray(a)
    out = cp.empty(host.shape, dtype=host.dtype)
    staging = _Staging.get(cp) if host.nbytes >= STAGED_MIN_BYTES else None
    if staging is not None:
        staging.upload(host, out)
    elif host.size:
        out.set(host)
    return out


def to_numpy(a: Any) -> np.ndarray:
    """Host copy of a NumPy or CuPy array (a NumPy array is returned as it is)."""
    if array_backend(a) == "cupy":
        return a.get()  # type: ignore[no-any-return]
    return np.asarray(a)
