"""``python -m bench.patching_profile`` (GPU host): where Morton patching of the bunny subdivided
to 17.8M faces spends its time, sorted and shuffled, three runs each: every stage function wrapped
with a device synchronization and a timer."""

import time

import cupy as cp

import workers.engine.patches as P
from bench.meshes import bench_mesh
from tests.conftest import MESHES

T = {}


def wrap(mod, name):
    f = getattr(mod, name)

    def g(*a, **k):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        r = f(*a, **k)
        cp.cuda.Device().synchronize()
        T[name] = T.get(name, 0) + time.perf_counter() - t
        return r

    setattr(mod, name, g)


for n in [
    "morton_patches",
    "_merge_small",
    "_bfs_split",
    "face_adjacency",
    "connected_components",
    "compact_groups",
    "_pairs_unique",
    "_csr_owned_first",
    "_local_lookup",
    "_owner_local",
    "_check_valence",
]:
    wrap(P, n)
for shuffle in (False, True):
    mesh = bench_mesh(MESHES / "stanford-bunny.obj", 16_000_000, shuffle=shuffle).to("cupy")
    _ = mesh.topology.boundary_edges
    mesh.topology.vf()
    for _rep in range(3):
        T.clear()
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        p = P.build_patches(mesh, 512, method="morton")
        cp.cuda.Device().synchronize()
        tot = time.perf_counter() - t
        print(
            f"shuffle={shuffle} faces={mesh.n_faces} total={tot * 1e3:.0f} ms "
            f"partition={p.partition_seconds * 1e3:.0f} ms patches={p.n_patches} "
            f"cuts={p.fallback_splits}",
            {k: round(v * 1e3, 1) for k, v in T.items()},
            flush=True,
        )
    del mesh
    cp.get_default_memory_pool().free_all_blocks()
