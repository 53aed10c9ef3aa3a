"""``python -m bench.patching_profile`` (GPU host): where Morton patching of the bunny subdivided
to 17.8M faces spends its time, sorted and shuffled, three runs each: every stage function wrapped
with a device synchronization and a timer. Then, once per order, the rows the kernels built are
compared with the array code's (``ROWS_ON_DEVICE`` off), array by array, and that run is timed
too. ``--sizes`` takes other face counts (default 16e6: 17.8M faces)."""

import argparse
import time

import cupy as cp
import numpy as np

import workers.engine.patches as P
from bench.meshes import bench_mesh
from tests.conftest import MESHES

T: dict[str, float] = {}
STAGES = (
    "_check_valence",
    "morton_rank",
    "_run_roots",
    "face_adjacency",
    "_piece_pairs",
    "_merge_pieces",
    "_rows_device",
    "_rows",
)


def wrap(mod, name):
    f = getattr(mod, name, None)
    if f is None:
        return

    def g(*a, **k):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        r = f(*a, **k)
        cp.cuda.Device().synchronize()
        T[name] = T.get(name, 0) + time.perf_counter() - t
        return r

    setattr(mod, name, g)


def timed(mesh):
    T.clear()
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    p = P.build_patches(mesh, 512, method="morton")
    cp.cuda.Device().synchronize()
    return p, time.perf_counter() - t


def sorts(m: int) -> None:
    """The two ways to order faces by a key, ties by index, timed on random 30-bit keys."""
    key = cp.random.randint(0, 1 << 30, size=m, dtype=cp.int64)
    for name, f in (
        ("argsort(key * m + index)", lambda: cp.argsort(key * m + cp.arange(m))),
        ("order_by (sort of packed words)", lambda: P.order_by(cp, key, 1 << 30)),
    ):
        f()
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        for _ in range(5):
            f()
        cp.cuda.Device().synchronize()
        print(f"  {name}: {(time.perf_counter() - t) / 5 * 1e3:.2f} ms for {m} keys", flush=True)


def threads(mesh) -> None:
    """The row kernel's block size, each timed over three whole patchings."""
    keep = P.ROW_THREADS
    for t in (256, 512, 1024):
        P.ROW_THREADS = t
        timed(mesh)
        best = min(timed(mesh)[1] for _ in range(3))
        print(f"  ROW_THREADS={t}: best total {best * 1e3:.1f} ms", flush=True)
    P.ROW_THREADS = keep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16e6")
    args = ap.parse_args()
    for n in STAGES:
        wrap(P, n)
    for size in (int(float(s)) for s in args.sizes.split(",")):
        for shuffle in (False, True):
            mesh = bench_mesh(MESHES / "stanford-bunny.obj", size, shuffle=shuffle).to("cupy")
            _ = mesh.topology.boundary_edges
            mesh.topology.vf()
            for _rep in range(3):
                p, tot = timed(mesh)
                s = p.summary()
                print(
                    f"shuffle={shuffle} faces={mesh.n_faces} total={tot * 1e3:.1f} ms "
                    f"partition={p.partition_seconds * 1e3:.1f} ms patches={p.n_patches} "
                    f"ribbon={s['ribbon_overhead']:.3f} faces_max={s['faces_max']}",
                    {k: round(v * 1e3, 1) for k, v in T.items()},
                    flush=True,
                )
            if hasattr(P, "ROWS_ON_DEVICE"):
                P.ROWS_ON_DEVICE = False
                ref, t_ref = timed(mesh)
                P.ROWS_ON_DEVICE = True
                same = all(
                    np.array_equal(cp.asnumpy(getattr(p, f)), cp.asnumpy(getattr(ref, f)))
                    and getattr(p, f).dtype == getattr(ref, f).dtype
                    for f in P.Patches.ARRAYS
                )
                print(
                    f"  array-code rows: total={t_ref * 1e3:.1f} ms; kernel rows equal: {same}",
                    flush=True,
                )
            if shuffle:
                threads(mesh)
            del mesh
            cp.get_default_memory_pool().free_all_blocks()
        sorts(size)


if __name__ == "__main__":
    main()
