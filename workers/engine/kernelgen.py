"""Patched kernels from a per-element body: the operation author names the query and writes the
body; this module writes the rest (the body struct, the ``extern "C"`` entry point staging the
patch in shared memory, ``for_each<Query>``), compiles it once per process with NVRTC and caches
it (``kernels/loader.py``'s options: C++17, no FMA contraction).

    kernel = patched_kernel(
        "smooth", "VV",
        params="const float* V, float lambda, float* out",
        body='''
            const float3 p = load3(V, g);
            ...  // g: the element's global id; nb.size(), nb[j] (global ids), nb.local(j)
        ''',
    )
    launch_patched(kernel, patches, (V, np.float32(0.5), out), op="smooth")

The body runs once per element the patch owns with ``g``, ``nb`` (the query's answer) and
``view`` (the patch: local EV/FE in shared memory, local→global maps) in scope; helpers from
``common.cuh`` and ``patched.cuh`` (``face_vertex``, ``load3d``, ...) are available.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from .errors import KernelError
from .queries import QUERIES

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _members(params: str) -> list[tuple[str, str]]:
    """``(declaration, name)`` of each kernel parameter in a C parameter list."""
    out = []
    for part in (p.strip() for p in params.split(",")):
        if not part:
            continue
        names = _IDENT.findall(part)
        if len(names) < 2:
            raise ValueError(f"parameter {part!r} needs a type and a name")
        out.append((part, names[-1]))
    return out


def generate(name: str, query: str, params: str, body: str) -> str:
    """The CUDA source of patched kernel ``name`` answering ``query`` with ``body``."""
    if query not in QUERIES:
        raise ValueError(f"unknown query {query!r}; one of {', '.join(QUERIES)}")
    if not _IDENT.fullmatch(name):
        raise ValueError(f"kernel name {name!r} is not an identifier")
    members = _members(params)
    fields = "".join(f"  {decl};\n" for decl, _ in members)
    init = ", ".join(n for _, n in members)
    extra = "".join(f", {decl}" for decl, _ in members)
    return (
        '#include "patched.cuh"\n'
        f"struct {name}_body {{\n{fields}"
        "  template <class Nb>\n"
        "  __device__ void operator()(int g, const Nb& nb, const PatchView& view) const {\n"
        f"{body}\n"
        "  }\n"
        "};\n"
        f'extern "C" __global__ void {name}(PATCH_PARAMS{extra}) {{\n'
        "  extern __shared__ __align__(16) unsigned char smem[];\n"
        f"  for_each<Query::{query}>(PATCH_ARGS, smem, {name}_body{{{init}}});\n"
        "}\n"
    )


@cache
def _compiled(source: str, name: str, device: int) -> Any:
    from .backend import cupy_module
    from .kernels.loader import OPTIONS

    cp = cupy_module()
    try:
        mod = cp.RawModule(code=source, options=OPTIONS)
        mod.compile()
    except cp.cuda.compiler.CompileException as exc:
        raise KernelError("CUDA compilation failed", kernel=name, log=str(exc)[-2000:]) from None
    return mod.get_function(name)


def patched_kernel(name: str, query: str, *, params: str, body: str) -> Any:
    """The compiled ``cupy.RawKernel`` (cached per source and device) for ``launch_patched``."""
    from .backend import cupy_module

    cp = cupy_module()
    return _compiled(generate(name, query, params, body), name, cp.cuda.Device().id)
