"""Writing an operation's artifacts (sparse matrices) as files: SciPy's NPZ or Matrix Market."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from .backend import array_backend
from .errors import SpecError

MATRIX_FORMATS = ("npz", "mtx")
MEDIA_TYPES = {"npz": "application/x-npz", "mtx": "text/x-matrix-market"}


def to_scipy(a: Any) -> Any:
    """A SciPy sparse matrix (or NumPy array) from a SciPy or CuPy one."""
    if array_backend(a) == "cupy":
        return a.get()
    return a


def serialize_matrix(a: Any, fmt: str) -> bytes:
    import scipy.io
    import scipy.sparse as sp

    if fmt not in MATRIX_FORMATS:
        raise SpecError(
            "unsupported matrix format",
            code="spec.unknown_format",
            format=fmt,
            supported=list(MATRIX_FORMATS),
        )
    m = to_scipy(a)
    buf = io.BytesIO()
    if fmt == "npz":
        if sp.issparse(m):
            sp.save_npz(buf, sp.csr_matrix(m), compressed=False)
        else:
            np.savez(buf, data=np.asarray(m))
        return buf.getvalue()
    text = io.BytesIO()
    scipy.io.mmwrite(text, sp.coo_matrix(m) if sp.issparse(m) else np.asarray(m))
    return text.getvalue()


def load_matrix(data: bytes, fmt: str) -> Any:
    """The inverse of :func:`serialize_matrix`: a SciPy CSR matrix (or array)."""
    import inspect

    import scipy.io
    import scipy.sparse as sp

    if fmt == "npz":
        return sp.load_npz(io.BytesIO(data)).tocsr()
    # newer SciPy warns unless told which sparse type to return
    kw = {"spmatrix": True} if "spmatrix" in inspect.signature(scipy.io.mmread).parameters else {}
    m = scipy.io.mmread(io.BytesIO(data), **kw)
    return sp.csr_matrix(m) if sp.issparse(m) else m
