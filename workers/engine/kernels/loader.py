"""The one place that compiles CUDA source: ``load_kernel(stem, name)``.

Kernel source lives in ``.cu`` files beside this module (same stem as the operation that launches
them) and may include ``common.cuh``. Each file is compiled once per process, device and set of
``#define`` constants with ``cupy.RawModule`` (NVRTC) and cached; the Python side adds nothing but
that short preamble of constants.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..backend import cupy_module
from ..errors import KernelError

HERE = Path(__file__).resolve().parent
#: no fused multiply-add contraction: ``a*b - c*d`` then rounds like the NumPy twin, so the cross
#: product of parallel vectors is exactly zero on both (FMA keeps one product's rounding error)
OPTIONS = ("-std=c++17", "--fmad=false", f"-I{HERE}")


def source(stem: str) -> str:
    path = HERE / f"{stem}.cu"
    if not path.is_file():
        raise FileNotFoundError(path)
    return path.read_text()


@cache
def _module(stem: str, defines: tuple[tuple[str, int | float], ...], device: int) -> Any:
    cp = cupy_module()
    preamble = "".join(f"#define {k} {v}\n" for k, v in defines)
    try:
        mod = cp.RawModule(code=preamble + source(stem), options=OPTIONS)
        mod.compile()
    except cp.cuda.compiler.CompileException as exc:
        raise KernelError("CUDA compilation failed", kernel=stem, log=str(exc)[-2000:]) from None
    return mod


#: the kernels handed out, by (stem, name, defines, device): a round of the dynamic operations
#: launches some forty, and the module lookup with ``get_function`` took 8 us a kernel on the
#: host (cProfile, a 1.1M-face decimation), against 13 us for the launch itself
_KERNELS: dict[tuple[Any, ...], Any] = {}


def load_kernel(stem: str, name: str, **defines: int | float) -> Any:
    """The ``cupy.RawKernel`` ``name`` from ``kernels/<stem>.cu`` on the current device."""
    cp = cupy_module()
    consts = tuple(sorted(defines.items()))
    key = (stem, name, consts, cp.cuda.runtime.getDevice())
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = _module(stem, consts, key[3]).get_function(name)
    return kernel


def launch(kernel: Any, n: int, args: tuple[Any, ...], *, op: str, threads: int = 256) -> None:
    """Launch ``kernel`` over ``n`` elements (one thread each, grid-stride safe) and turn CUDA
    failures into :class:`KernelError` carrying the op and kernel names."""
    if n <= 0:
        return
    blocks = min((n + threads - 1) // threads, 65535 * 32)
    launch_blocks(kernel, blocks, threads, args, op=op)


def launch_blocks(
    kernel: Any, blocks: int, threads: int, args: tuple[Any, ...], *, op: str, shared_mem: int = 0
) -> None:
    """Launch ``kernel`` on ``blocks`` blocks of ``threads`` threads with ``shared_mem`` bytes of
    dynamic shared memory each (a block per patch, say), CUDA failures turned into
    :class:`KernelError` carrying the op and kernel names."""
    cp = cupy_module()
    try:
        kernel((blocks,), (threads,), args, shared_mem=shared_mem)
    except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as exc:
        raise KernelError(
            "CUDA launch failed", op=op, kernel=kernel.name, reason=str(exc)
        ) from None
