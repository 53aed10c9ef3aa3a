"""Hardware counters of the patched kernels against the global ones (GPU host), under Nsight
Compute: the patched and global vertex normals and uniform Laplacian step on the bunny subdivided
to 4.4M faces, Morton patches of 512 faces, one launch each after warm-up (profiling is switched
on only around them)::

    ncu --profile-from-start off --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,\
        dram__bytes_write.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,\
        sm__warps_active.avg.pct_of_peak_sustained_active,\
        l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
        python3 -m bench.ncu_patched sorted|shuffled
"""

import sys

import cupy as cp

from bench.meshes import bench_mesh
from tests.conftest import MESHES
from workers.engine import patched_ops
from workers.engine.ops import OPS
from workers.engine.patches import build_patches

shuffle = len(sys.argv) > 1 and sys.argv[1] == "shuffled"
mesh = bench_mesh(MESHES / "stanford-bunny.obj", 4_000_000, shuffle=shuffle).to("cupy")
patches = build_patches(mesh, 512, method="morton")
vn = OPS.get("vertex_normals")
p = vn.parse_params({})
fixed = mesh.topology.boundary_vertices
for _ in range(2):  # warm-up: compile and cache
    patched_ops.vertex_normals(mesh, patches)
    vn.cupy(mesh, p)
    patched_ops.smooth_step(mesh, patches, 0.5, fixed)
    patched_ops.smooth_step_global(mesh, 0.5, fixed)
cp.cuda.Device().synchronize()
cp.cuda.profiler.start()
patched_ops.vertex_normals(mesh, patches)
vn.cupy(mesh, p)
patched_ops.smooth_step(mesh, patches, 0.5, fixed)
patched_ops.smooth_step_global(mesh, 0.5, fixed)
cp.cuda.Device().synchronize()
cp.cuda.profiler.stop()
print("faces", mesh.n_faces, "patches", patches.n_patches)
