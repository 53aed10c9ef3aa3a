"""``python -m bench.dynamic_profile``: where the dynamic operations' time goes, stage by stage.

Runs ``decimate`` (to 10 %) and ``isotropic_remesh`` (5 iterations at the input's mean edge
length) on the bunny subdivided to each size, as ``bench.dynamic`` does, with every stage function
of the rounds wrapped in a timer that synchronizes the device before and after it. The times are
inclusive (a stage called inside another counts in both) and the synchronizations make the whole
slower than an untimed run: the table says where the time is, ``bench.dynamic`` how much there is.
One warm-up run of each operation first (kernel compilation). Prints one table per run.
``--host N``: one more run under ``cProfile`` (no stage timers), its N functions of most own
time: on the GPU a function's own time there is the host launching kernels or waiting for the
device at a read, a sort or a ``bincount``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

#: (module, attribute): the stage functions timed, looked up wherever they were imported to
STAGES = [
    ("workers.engine.mesh", "TriMesh.from_arrays"),
    ("workers.engine.mesh", "TriMesh.to"),
    ("workers.engine.ops._collapse", "run_rounds"),
    ("workers.engine.topology", "Topology.build"),
    ("workers.engine.topology", "Topology.vertex_fans"),
    ("workers.engine.dynamic.collapse", "locked_vertices"),
    ("workers.engine.dynamic.collapse", "finish"),
    ("workers.engine.dynamic.collapse", "collapse_setup"),
    ("workers.engine.dynamic.collapse", "edge_faces_mask"),
    ("workers.engine.dynamic.collapse_check", "vertex_faces"),
    ("workers.engine.graph", "smallest"),
    ("workers.engine.graph", "ends_of"),
    ("workers.engine.graph", "connected_components"),
    ("workers.engine.ops._collapse", "initial_state"),
    ("workers.engine.ops._collapse", "result_mesh"),
    ("workers.engine.dynamic.collapse", "plan_round"),
    ("workers.engine.dynamic.collapse", "eligible_edges"),
    ("workers.engine.dynamic.collapse", "check_candidates"),
    ("workers.engine.dynamic.collapse", "within_budget"),
    ("workers.engine.dynamic.collapse", "apply_collapses"),
    ("workers.engine.dynamic.collapse", "collapse_round"),
    ("workers.engine.dynamic.cavity", "priority_keys"),
    ("workers.engine.dynamic.cavity", "edge_local_minima"),
    ("workers.engine.dynamic.cavity", "blocked_by"),
    ("workers.engine.dynamic.quadrics", "optimal_points"),
    ("workers.engine.dynamic.quadrics", "collapse_points"),
    ("workers.engine.dynamic.quadrics", "vertex_quadrics"),
    ("workers.engine.ops.decimate", "_Planner.__call__"),
    ("workers.engine.dynamic.split", "split_round"),
    ("workers.engine.dynamic.remesh_collapse", "collapse_round"),
    ("workers.engine.dynamic.collapse_check", "check_collapses"),
    ("workers.engine.dynamic.cavity", "independent_collapses"),
    ("workers.engine.dynamic.remesh_collapse", "apply_collapses"),
    ("workers.engine.dynamic.flip", "valence_flip_round"),
    ("workers.engine.dynamic.relax", "tangential_relax"),
    ("workers.engine.dynamic.slivers", "remove_slivers"),
    ("workers.engine.dynamic._edges", "edge_table"),
    ("workers.engine.ops.isotropic_remesh", "_initial_surface"),
    ("workers.engine.ops.isotropic_remesh", "quality"),
]


class Timers:
    def __init__(self, sync: Callable[[], None]) -> None:
        self.sync = sync
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.active = False

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kw: Any) -> Any:
            if not self.active:
                return fn(*args, **kw)
            self.sync()
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.sync()
                self.seconds[name] += time.perf_counter() - t
                self.calls[name] += 1

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    def install(self) -> None:
        """Replace each stage function by its timed wrapper in its module and in every engine
        module that imported it by name."""
        import importlib

        for mod_name, attr in STAGES:
            mod = importlib.import_module(mod_name)
            owner: Any = mod
            *path, last = attr.split(".")
            for p in path:
                owner = getattr(owner, p)
            fn = owner.__dict__[last]
            label = f"{mod_name.rsplit('.', 1)[-1]}.{attr}"
            if isinstance(fn, classmethod):
                setattr(owner, last, classmethod(self.wrap(label, fn.__func__)))
                continue
            wrapped = self.wrap(label, fn)
            setattr(owner, last, wrapped)
            if path:
                continue
            for m in list(sys.modules.values()):
                if getattr(m, "__name__", "").startswith("workers.engine") and (
                    m.__dict__.get(last) is fn
                ):
                    setattr(m, last, wrapped)

    def table(self, total: float) -> str:
        lines = ["| stage | calls | seconds | share |", "|---|---|---|---|"]
        for name, s in sorted(self.seconds.items(), key=lambda kv: -kv[1]):
            share = s / total
            lines.append(f"| {name} | {self.calls[name]} | {s:.3f} | {share:.0%} |")
        self.seconds.clear()
        self.calls.clear()
        return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.dynamic_profile", description=__doc__)
    ap.add_argument("--sizes", default="1e6", help="minimum face counts")
    ap.add_argument("--ops", default="decimate,isotropic_remesh")
    ap.add_argument("--device", default="gpu", choices=["cpu", "gpu"])
    ap.add_argument(
        "--host",
        type=int,
        default=0,
        metavar="N",
        help="also profile one more run on the host (cProfile, no stage timers) and print its N "
        "functions of most own time: where the host waits on the device (reads, sorts) and "
        "where it launches",
    )
    a = ap.parse_args()
    from bench.decimate_quality import tools as decimators
    from bench.dynamic import RATIO, remeshers
    from bench.meshes import bench_mesh
    from bench.remesh_quality import mean_edge_length
    from tests.conftest import MESHES

    def sync() -> None:
        if a.device == "gpu":
            import cupy

            cupy.cuda.Device().synchronize()

    timers = Timers(sync)
    timers.install()
    fns = {
        "decimate": decimators(a.device)[f"tessera decimate ({a.device})"],
        "isotropic_remesh": remeshers(a.device)[f"tessera ({a.device})"],
    }
    for size in [int(float(s)) for s in a.sizes.split(",") if s]:
        mesh = bench_mesh(MESHES / "stanford-bunny.obj", size)
        V = np.asarray(mesh.V, dtype=np.float64)
        F = np.asarray(mesh.F, dtype=np.int64)
        L = mean_edge_length(V, F)
        for op in [o for o in a.ops.split(",") if o]:
            arg = RATIO if op == "decimate" else L
            fns[op](V, F, arg)  # warm-up, untimed
            t = time.perf_counter()
            out = fns[op](V, F, arg)
            plain = time.perf_counter() - t
            timers.active = True
            t = time.perf_counter()
            out = fns[op](V, F, arg)
            total = time.perf_counter() - t
            timers.active = False
            print(
                f"\n### {op}, {len(F):,} faces -> {len(out[1]):,} ({a.device}): "
                f"{plain:.3f} s untimed, {total:.3f} s with the stage timers\n"
            )
            print(timers.table(total), flush=True)
            if a.host:
                import cProfile
                import io
                import pstats

                prof = cProfile.Profile()
                prof.enable()
                fns[op](V, F, arg)
                sync()
                prof.disable()
                buf = io.StringIO()
                pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(a.host)
                print(f"\nhost profile ({op}, {len(F):,} faces):\n{buf.getvalue()}", flush=True)


if __name__ == "__main__":
    main()
