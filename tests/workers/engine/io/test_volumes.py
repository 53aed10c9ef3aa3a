"""Volumes for marching_cubes: NRRD (raw and gzip encodings) and raw uploads against .npy."""

from __future__ import annotations

import gzip
import io
import tracemalloc

import numpy as np
import pytest

from workers.engine import FormatError, OpParamsError, TriMesh
from workers.engine.io import RawLayout, load_bytes
from workers.engine.marching_cubes import sphere_distance
from workers.engine.pipeline import run_pipeline

N = 20
S, ORIGIN, SPACING = sphere_distance(np, N, (0.1, 0.0, -0.05))
S = S.astype(np.float32)


def nrrd(
    a: np.ndarray = S,
    encoding: str = "raw",
    *,
    typ: str = "float",
    endian: str = "little",
    space: str | None = None,
    extra: str = "",
    sizes: str | None = None,
) -> bytes:
    """An NRRD file of ``a`` (first axis fastest), placed like the sphere field."""
    order = "<" if endian == "little" else ">"
    body = a.astype(a.dtype.newbyteorder(order)).tobytes(order="F")
    if encoding == "gzip":
        body = gzip.compress(body, mtime=0)
    dirs = "({},0,0) (0,{},0) (0,0,{})".format(*SPACING)
    space = (
        space
        if space is not None
        else (
            f"space: right-anterior-superior\nspace directions: {dirs}\n"
            "space origin: ({},{},{})\n".format(*ORIGIN)
        )
    )
    head = (
        f"NRRD0004\n# written by a test\ntype: {typ}\ndimension: 3\n"
        f"sizes: {sizes or ' '.join(map(str, a.shape))}\nendian: {endian}\n"
        f"encoding: {encoding}\n{space}key:=value\n" + (extra + "\n" if extra else "") + "\n"
    )
    return head.encode() + body


def npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def contour(volume: TriMesh, **field: object) -> TriMesh:
    step = {"field": {"type": "volume", **field}, "isovalue": 0.6, "dtype": "float64"}
    return run_pipeline(volume, [("marching_cubes", step)], device="cpu").mesh


@pytest.fixture(scope="module")
def reference() -> TriMesh:
    return contour(load_bytes(npy(S), "s.npy"), origin=list(ORIGIN), spacing=list(SPACING))


def _same(a: TriMesh, b: TriMesh) -> None:
    assert a.n_faces > 100
    np.testing.assert_array_equal(a.F, b.F)
    np.testing.assert_array_equal(a.V, b.V)


@pytest.mark.parametrize("encoding", ["raw", "gzip"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_nrrd_gives_the_npy_mesh_placed_by_its_header(reference, encoding, endian) -> None:
    vol = load_bytes(nrrd(encoding=encoding, endian=endian), "sphere.nrrd")
    assert vol.vertex_attrs["volume"].shape == (1, N, N, N)
    _same(contour(vol), reference)  # origin and spacing from the header
    _same(contour(load_bytes(nrrd(encoding=encoding), "")), reference)  # told by its magic


def test_nrrd_spacings_and_negative_directions(reference) -> None:
    plain = "spacings: {} {} {}\n".format(*SPACING)
    got = contour(load_bytes(nrrd(space=plain), "s.nrrd"), origin=list(ORIGIN))
    _same(got, reference)
    # axis 1 stored from the far end with a negative step: the same samples in space
    far = ORIGIN[1] + (N - 1) * SPACING[1]
    flipped = (
        f"space directions: ({SPACING[0]},0,0) (0,{-SPACING[1]},0) (0,0,{SPACING[2]})\n"
        + f"space origin: ({ORIGIN[0]},{far},{ORIGIN[2]})\n"
    )
    got = contour(load_bytes(nrrd(S[:, ::-1, :], space=flipped), "s.nrrd"))
    np.testing.assert_array_equal(got.F, reference.F)
    np.testing.assert_allclose(got.V, reference.V, atol=1e-12)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["float32", "uint16"])
def test_raw_gives_the_npy_mesh(reference, order, dtype) -> None:
    scale = 1000.0 if dtype == "uint16" else 1.0
    a = (S * scale).astype(dtype)
    layout = RawLayout((N, N, N), dtype, order)
    vol = load_bytes(a.tobytes(order=order), "sphere.raw", raw=layout)
    field = {"origin": list(ORIGIN), "spacing": list(SPACING), "shape": [N] * 3}
    if dtype == "uint16":
        step = {"field": {"type": "volume", **field}, "isovalue": 600.0, "dtype": "float64"}
        got = run_pipeline(vol, [("marching_cubes", step)], device="cpu").mesh
        ref = run_pipeline(load_bytes(npy(a), "a.npy"), [("marching_cubes", step)], device="cpu")
        _same(got, ref.mesh)
    else:
        _same(contour(vol, **field), reference)


def test_raw_layout_errors() -> None:
    data = S.tobytes()
    with pytest.raises(FormatError) as e:
        load_bytes(data, "s.raw")
    assert e.value.code == "format.raw_needs_layout"
    with pytest.raises(FormatError) as e:
        load_bytes(data[:-1], "s.raw", raw=RawLayout((N, N, N), "float32"))
    assert e.value.code == "format.raw_size_mismatch"
    assert e.value.detail["expected_bytes"] == N**3 * 4
    with pytest.raises(FormatError) as e:
        load_bytes(data, "s.raw", raw=RawLayout((N, N, N), "float64"))
    assert e.value.code == "format.raw_size_mismatch"
    with pytest.raises(OpParamsError) as e2:
        contour(load_bytes(npy(S), "s.npy"), shape=[N, N, N + 1])
    assert e2.value.code == "op.volume_shape_mismatch"


NRRD_ERRORS = [
        (nrrd(extra="data file: sphere.raw"), "format.nrrd_detached"),  # detached data
        (
            nrrd(S[:, :, 0:1].reshape(N, N, 1), sizes=f"{N} {N}").replace(
                b"dimension: 3", b"dimension: 2"
            ),
            "format.nrrd_bad_header",
        ),  # fmt: skip
        (nrrd(typ="block"), "format.nrrd_bad_header"),  # no block type
        (nrrd(encoding="ascii"), "format.nrrd_unsupported"),  # only raw and gzip
        (nrrd(extra="byte skip: 4"), "format.nrrd_unsupported"),
        (nrrd().replace(b"endian: little\n", b""), "format.nrrd_bad_header"),  # float needs it
        (nrrd(sizes=f"{N} {N}"), "format.nrrd_bad_header"),  # two sizes
        (nrrd()[:-1], "format.nrrd_size_mismatch"),  # a byte short
        (nrrd() + b"\0", "format.nrrd_size_mismatch"),  # a byte over
        (nrrd(encoding="gzip")[:-200], "format.archive_corrupt"),  # truncated stream
        (nrrd(encoding="gzip").replace(b"\x1f\x8b\x08", b"\x1f\x8b\x09"), "format.archive_corrupt"),
        (nrrd(sizes="1024 1024 1024"), "format.nrrd_size_mismatch"),  # declares 4 GiB
        (nrrd(sizes="2048 2 2"), "format.bad_volume"),  # a side over the limit
        (nrrd(space="space directions: (0,1,0) (1,0,0) (0,0,1)\n"), "format.nrrd_unsupported"),
        (nrrd(space="space origin: (1,2)\n"), "format.nrrd_bad_header"),
        (nrrd().replace(b"\n\n", b"\n", 1).split(b"key:=value")[0], "format.nrrd_bad_header"),
]  # fmt: skip


# ids by position and code: the same on every pytest-xdist worker (bytes ids are not readable)
@pytest.mark.parametrize(
    ("data", "code"), NRRD_ERRORS, ids=[f"{i}-{c}" for i, (_, c) in enumerate(NRRD_ERRORS)]
)
def test_nrrd_errors(data: bytes, code: str) -> None:
    with pytest.raises(FormatError) as e:
        load_bytes(data, "v.nrrd")
    assert e.value.code == code


@pytest.mark.parametrize(
    ("encoding", "limit", "code"),
    [
        ("raw", None, "format.nrrd_size_mismatch"),
        ("gzip", None, "format.archive_too_large"),  # 4 GiB declared: over the 2 GiB default
        ("gzip", 8 << 30, "format.nrrd_size_mismatch"),  # inflates to what it holds, no more
    ],
)
def test_nrrd_declaring_a_huge_volume_allocates_nothing(encoding, limit, code) -> None:
    data = nrrd(encoding=encoding, sizes="1024 1024 1024")
    kw = {} if limit is None else {"max_expanded": limit}
    tracemalloc.start()
    with pytest.raises(FormatError) as e:
        load_bytes(data, "big.nrrd", **kw)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert e.value.code == code and peak < 8 << 20


def test_nrrd_name_must_match() -> None:
    with pytest.raises(FormatError) as e:
        load_bytes(nrrd(), "v.obj")
    assert e.value.code == "format.mismatch"
