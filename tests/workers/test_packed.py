"""A batch chunk run packed gives every item what it gets run alone: the same outcome (state,
error code, input counts, statistics, backend) and the same bytes written."""

from __future__ import annotations

import pytest

from tests.conftest import mesh_path
from workers import packed
from workers.engine.pipeline import parse_pipeline
from workers.queue.blobs import LocalBlobStore, members_key, pack_members
from workers.runner import execute_chunk

PIPELINE = [
    {"op": "weld"},
    {"op": "repair"},
    {"op": "vertex_normals", "weighting": "angle"},
    {"op": "stats"},
]
#: small shared meshes, one of them twice, one with texture coordinates (it runs alone)
NAMES = ["rx-cube.obj", "rx-sphere3.obj", "suzanne.obj", "woody.obj", "rx-cube.obj", "spot.obj"]
BROKEN = {
    "notes.txt": b"these are not the meshes you are looking for\n" * 5,
    # one face whose corners weld into one point: alone, "the pipeline left the mesh with no faces"
    "collapsed.obj": b"v 0 0 0\nv 0 0 0\nv 0 0 0\nf 1 2 3\n",
    "out_of_range.obj": b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n",
}


def _run(tmp_path, job_id, files, pack, threads=2, fmt="ply"):
    store = LocalBlobStore(tmp_path / job_id)
    store.put_chunks(members_key(job_id), pack_members(list(enumerate(files.values()))))
    items = [{"index": i, "path": p, "output": p} for i, p in enumerate(files)]
    outcomes: dict[int, dict] = {}
    spec = {"pipeline": PIPELINE, "output": {"format": fmt}, "device": "cpu"}
    execute_chunk(job_id, spec, store, items, outcomes.__setitem__, pack=pack, io_threads=threads)
    data = {i: store.get_bytes(o["key"]) for i, o in outcomes.items() if "key" in o}
    return outcomes, data


def _files() -> dict[str, bytes]:
    files = {f"{i}-{n}": mesh_path(n).read_bytes() for i, n in enumerate(NAMES)}
    return files | BROKEN


def _same_outcomes(a: dict[int, dict], b: dict[int, dict], *, exact: bool = True) -> None:
    """Item by item the same outcome. ``exact=False`` (the GPU) lets the statistics' float
    sums (area, volume) differ in their last bits: a pack sums them in another order."""
    assert sorted(a) == sorted(b)
    for i in a:
        x, y = a[i], b[i]
        assert x["state"] == y["state"], i
        if x["state"] == "failed":
            assert x["error"] == y["error"], i
            continue
        for k in ("bytes", "input", "backend"):
            assert x[k] == y[k], (i, k)
        if exact:
            assert x["stats"] == y["stats"], i
        else:
            assert x["stats"].keys() == y["stats"].keys(), i
            for f, v in x["stats"].items():
                w = y["stats"][f]
                same = v == pytest.approx(w, rel=1e-12) if isinstance(v, float) else v == w
                assert same, (i, f, v, w)
        assert x["timings"]["serialize"] > 0


@pytest.mark.parametrize("threads", [1, 3])
def test_a_packed_chunk_writes_what_each_item_alone_writes(tmp_path, monkeypatch, threads):
    monkeypatch.setattr(packed, "CPU_PACK_FACES", 2_000)  # woody (1,267 faces) packs too
    ran: list[int] = []
    real = packed.run_packed

    def spy(meshes, steps, **kw):
        run = real(meshes, steps, **kw)  # raising would send its items to run alone
        ran.append(len(meshes))
        return run

    monkeypatch.setattr(packed, "run_packed", spy)
    files = _files()
    alone, alone_bytes = _run(tmp_path, "alone", files, pack=False)
    assert ran == []
    got, got_bytes = _run(tmp_path, "packed", files, pack=True, threads=threads)
    # suzanne (its file's normals) in a pack of its own; not spot (uv), not the broken files
    assert sorted(ran) == [1, 5]
    _same_outcomes(got, alone)
    assert got_bytes == alone_bytes and len(got_bytes) == 6
    assert got[7]["error"]["code"] == "mesh.no_faces_left"


def _textured(name: str, seed: int) -> bytes:
    """A shared mesh as an OBJ with texture coordinates per corner (seams wherever two faces
    disagree)."""
    import numpy as np

    from workers.engine.io import load_bytes, serialize
    from workers.engine.mesh import TriMesh

    m = load_bytes(mesh_path(name).read_bytes(), name)
    uv = np.random.default_rng(seed).random((m.n_faces, 3, 2)).astype(np.float32)
    return serialize(TriMesh(m.V, m.F, corner_attrs={"uv": uv}), "obj")


def test_textured_items_are_packed_and_written_as_each_alone(tmp_path, monkeypatch):
    """Items with texture coordinates pack together (their own signature) and come out, as
    OBJ with their ``vt``, byte for byte what each alone gives, also one whose weld merges
    vertices; one whose repair turns a face over makes its pack run its members alone (still
    the same bytes)."""
    sizes: list[int] = []
    ran: list[int] = []  # the packs that ran to the end
    real = packed.run_packed

    def spy(m, s, **kw):
        sizes.append(len(m))
        run = real(m, s, **kw)
        ran.append(len(m))
        return run

    monkeypatch.setattr(packed, "run_packed", spy)
    files = {
        "a.obj": _textured("woody.obj", 1),
        "b.obj": _textured("rx-sphere3.obj", 2),
        "c.obj": _textured("rx-cube.obj", 3),
    }
    monkeypatch.setattr(packed, "CPU_PACK_FACES", 2_000)
    got, got_bytes = _run(tmp_path, "packed", files, pack=True, fmt="obj")
    alone, alone_bytes = _run(tmp_path, "alone", files, pack=False, fmt="obj")
    assert sizes == [3]
    _same_outcomes(got, alone)
    assert got_bytes == alone_bytes and all(b"\nvt " in b for b in got_bytes.values())
    soup = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 0 0\nv 0 1 0\nv 1 1 1\n"
    soup += b"vt 0 0\nvt 1 0\nvt 0 1\nvt 0.5 0.5\n"
    for k, face in enumerate(
        [
            b"f 1/1 2/2 3/3\nf 5/3 4/2 6/4\n",  # weld joins 2-4, 3-5: faces kept, packed
            # and repair turns one over: its corners go with the face's row, packed as well
            b"f 1/1 2/2 3/3\nf 4/2 5/3 6/4\n",
        ]
    ):
        files["d.obj"] = soup + face
        sizes.clear()
        ran.clear()
        got, got_bytes = _run(tmp_path, f"packed{k}", files, pack=True, fmt="obj")
        alone, alone_bytes = _run(tmp_path, f"alone{k}", files, pack=False, fmt="obj")
        assert sizes == [4] and ran == [4]
        _same_outcomes(got, alone)
        assert got_bytes == alone_bytes


def test_textured_assets_with_their_libraries_are_packed_and_written_as_each_alone(
    tmp_path, monkeypatch
):
    """glTF assets (materials, textures, corner normals and texture coordinates, split
    vertices a weld joins) and an OBJ zip with its MTL and textures: packed by signature, each
    written as GLB byte for byte what it alone gives, with its own library."""
    from tests.conftest import ASSETS

    monkeypatch.setattr(packed, "CPU_PACK_FACES", 5_000)
    ran: list[int] = []
    real = packed.run_packed

    def spy(m, s, **kw):
        run = real(m, s, **kw)
        ran.append(len(m))
        return run

    monkeypatch.setattr(packed, "run_packed", spy)
    names = ("Duck.glb", "fuze.zip", "BoxTextured.glb", "CesiumMilkTruck.glb")
    files = {f"{i}/{n}": (ASSETS / n).read_bytes() for i, n in enumerate(names)}
    got, got_bytes = _run(tmp_path, "packed", files, pack=True, fmt="glb")
    assert sorted(ran) == [1, 3]  # the three GLBs share a signature
    alone, alone_bytes = _run(tmp_path, "alone", files, pack=False, fmt="glb")
    _same_outcomes(got, alone)
    assert got_bytes == alone_bytes and len(got_bytes) == 4


def test_a_small_pack_budget_cuts_the_items_into_several_packs(tmp_path, monkeypatch):
    monkeypatch.setattr(packed, "CPU_PACK_BUDGET", 1_000)
    sizes: list[int] = []
    real = packed.run_packed
    monkeypatch.setattr(
        packed, "run_packed", lambda m, s, **kw: sizes.append(len(m)) or real(m, s, **kw)
    )
    files = {f"{i}.obj": mesh_path(n).read_bytes() for i, n in enumerate(["rx-sphere3.obj"] * 3)}
    got, got_bytes = _run(tmp_path, "p", files, pack=True)
    assert sizes == [1, 1, 1]  # 768 faces each: one per pack
    alone, alone_bytes = _run(tmp_path, "a", files, pack=False)
    _same_outcomes(got, alone)
    assert got_bytes == alone_bytes


def test_which_pipelines_pack():
    assert packed.packs_pipeline(parse_pipeline(["weld", "repair", "stats"]))
    assert not packed.packs_pipeline(parse_pipeline(["weld", "laplacian_smooth"]))
    assert not packed.packs_pipeline(parse_pipeline([("weld", {"tolerance": 0.1})]))
    assert not packed.packs_pipeline(parse_pipeline([]))
    # a measurement that may refuse a mesh (the testing op) is not skipped: no pack
    assert not packed.packs_pipeline(parse_pipeline(["weld", ("sleep", {"fail": "input"})]))


@pytest.mark.gpu
def test_a_packed_chunk_on_the_gpu_gives_each_item_its_own_outcome(tmp_path, monkeypatch):
    """On the GPU the same items packed (all but the broken files) and one by one:
    the same states, errors, input counts, statistics and file sizes (the bytes of the normals
    may differ in the last bits: the GPU's atomic sums are not ordered, run to run)."""
    files = _files()
    spec = {"pipeline": PIPELINE, "output": {"format": "ply"}, "device": "gpu"}

    def run(job_id: str, pack: bool) -> dict[int, dict]:
        store = LocalBlobStore(tmp_path / job_id)
        store.put_chunks(members_key(job_id), pack_members(list(enumerate(files.values()))))
        items = [{"index": i, "path": p, "output": p} for i, p in enumerate(files)]
        out: dict[int, dict] = {}
        execute_chunk(job_id, spec, store, items, out.__setitem__, pack=pack)
        return out

    sizes: list[int] = []
    real = packed.run_packed
    monkeypatch.setattr(
        packed, "run_packed", lambda m, s, **kw: sizes.append(len(m)) or real(m, s, **kw)
    )
    got = run("packed", True)
    # suzanne alone (its normals), spot alone (its texture coordinates); cubes, sphere, woody,
    # collapsed together
    assert sorted(sizes) == [1, 1, 5]
    _same_outcomes(got, run("alone", False), exact=False)
    assert {o["backend"] for o in got.values() if o["state"] == "succeeded"} == {"cupy"}


@pytest.mark.parametrize("threads", [1, 4])
def test_items_are_fetched_on_threads_and_parsed_on_the_calling_thread_in_order(threads):
    import threading

    from workers.engine.io import load_bytes

    here = threading.get_ident()
    parsed_on: set[int] = set()
    fetched_on: set[int] = set()
    items = [{"index": i, "path": n} for i, n in enumerate(NAMES + ["gone.obj", "bad.obj"])]

    def fetch(item):
        fetched_on.add(threading.get_ident())
        if item["path"] == "gone.obj":
            raise KeyError("no such member")
        if item["path"] == "bad.obj":
            return b"v 0 0 0\nf 1 2 3\n"
        return mesh_path(item["path"]).read_bytes()

    def parse(item, data):
        parsed_on.add(threading.get_ident())
        return load_bytes(data, item["path"])

    got = packed.parse_items(items, fetch, parse, threads)
    assert [p.item["path"] for p in got] == [i["path"] for i in items]
    assert parsed_on == {here}
    if threads > 1:
        assert here not in fetched_on
    faces = [p.mesh.n_faces if p.mesh is not None else None for p in got]
    assert faces[:6] == [load_bytes(mesh_path(n).read_bytes(), n).n_faces for n in NAMES]
    assert faces[6:] == [None, None]
    assert isinstance(got[6].error, KeyError)
    assert getattr(got[7].error, "code", None) == "mesh.index_out_of_range"
    assert all(p.seconds >= 0 for p in got)


@pytest.mark.parametrize("misses", [1, 2])
def test_an_item_out_of_memory_once_runs_again_and_twice_fails_with_its_code(
    tmp_path, monkeypatch, misses
):
    """Workers sharing a GPU run out of its memory at times (another's pool holds freed
    blocks): an item whose run raises MemoryError gives back this process's memory and runs
    once more; out of memory twice, it fails alone with resources.out_of_memory, the other
    items as before."""
    from workers import runner

    real = runner.process
    left = {"suzanne.obj": misses}
    released: list[bool] = []

    def short_of_memory(mesh, spec, store, key, timings, report, **kw):
        if left.get(kw["input_name"], 0):
            left[kw["input_name"]] -= 1
            raise MemoryError("out of memory allocating 1,073,741,824 bytes")
        return real(mesh, spec, store, key, timings, report, **kw)

    monkeypatch.setattr(runner, "process", short_of_memory)
    monkeypatch.setattr(runner, "release_memory", lambda: released.append(True))
    files = {n: mesh_path(n).read_bytes() for n in ("rx-cube.obj", "suzanne.obj", "woody.obj")}
    got, _ = _run(tmp_path, f"oom{misses}", files, pack=False)
    states = [got[i]["state"] for i in range(3)]
    assert released == [True]
    if misses == 1:
        assert states == ["succeeded"] * 3
    else:
        assert states == ["succeeded", "failed", "succeeded"]
        assert got[1]["error"]["code"] == "resources.out_of_memory"
