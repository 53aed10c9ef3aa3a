"""``python -m bench.geodesic_memory`` (GPU host): the device memory one geodesic propagation
takes on the bunny midpoint-subdivided to 17.8M faces, from one source: what CuPy's pool holds
after the op (its total: the blocks it took from the driver, which other processes on the card
cannot have until it gives them back) against what is in use before and after."""

import cupy as cp
import numpy as np

from bench.meshes import bench_mesh
from tests.conftest import MESHES
from workers.engine import propagation as P


def main() -> None:
    mesh = bench_mesh(MESHES / "stanford-bunny.obj", int(16e6), backend="cupy")
    mesh.topology.vf()
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    before = pool.used_bytes()
    P.propagate_frontier(mesh, np.array([11611]))
    cp.cuda.Device().synchronize()
    gib = 2.0**30
    print(
        f"{mesh.n_faces} faces: in use before {before / gib:.2f} GiB (mesh and topology); after "
        f"the op the pool holds {pool.total_bytes() / gib:.2f} GiB, "
        f"{pool.used_bytes() / gib:.2f} GiB in use"
    )


if __name__ == "__main__":
    main()
