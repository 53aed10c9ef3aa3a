"""``python -m bench.decimate_check_order``: a probe for the next step of ``decimate``'s speed,
not a setting of the operation.

Today each round checks every candidate (the cheapest ``CANDIDATE_FRACTION`` of the eligible
edges) and then picks the independent local minima among the valid ones. The probe swaps in a
round that picks the local minima first and checks only them, pass by pass: a winner that fails
its checks drops out without blocking its neighbours, a valid one is accepted and blocks them.
It prints rounds, seconds, candidates checked and the sampled Hausdorff/mean distance to the
input for ``eager:<fraction>`` (the operation as it is) and ``lazy:<fraction>`` (the probe).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import bench.decimate_quality as dq
import workers.engine.dynamic.collapse as C
import workers.engine.ops._collapse as OC
import workers.engine.ops.decimate as D
from bench.meshes import bench_mesh
from tests.conftest import MESHES
from workers.engine.dynamic.cavity import blocked_by, edge_local_minima, priority_keys
from workers.engine.topology import Topology


def lazy_round(passes: int, checked: list[int]) -> Any:
    def round_(
        state: C.CollapseState,
        plan: C.Planner,
        log: C.RoundLog,
        *,
        preserve_boundary: bool,
        max_edge_length: float | None = None,
        budget: int | None = None,
        topo: Topology | None = None,
        passes_: int | None = None,
    ) -> tuple[C.CollapseState, int, int]:
        xp = state.xp
        planned = C.plan_round(state, plan, preserve_boundary, topo)
        if planned is None:
            return state, 0, 0
        topo, bnd_v, cands = planned
        k = len(cands)
        n, EV = state.n_vertices, topo.EV.astype(xp.int64)
        key = priority_keys(xp, cands.priority)
        alive, accepted = xp.ones(k, dtype=bool), xp.zeros(k, dtype=bool)
        for _ in range(passes):
            idx = xp.nonzero(edge_local_minima(xp, n, EV, cands.a, cands.b, key, alive))[0]
            if idx.shape[0] == 0:
                break
            checked[0] += int(idx.shape[0])
            reason = C.check_candidates(state, topo, bnd_v, cands.take(idx), max_edge_length)
            accepted[idx[reason == 0]] = True
            alive[idx] = False
            alive &= ~blocked_by(xp, n, EV, cands.a, cands.b, accepted)
        idx = C.within_budget(topo, cands, key, xp.nonzero(accepted)[0], budget)
        if idx.shape[0] == 0:
            return state, 0, 1
        return C.apply_collapses(state, topo, cands.take(idx)), int(idx.shape[0]), 1

    return round_


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--faces", default="2.5e5")
    ap.add_argument("--ratio", type=float, default=0.01)
    ap.add_argument("--modes", default="eager:0.2,lazy:1.0")
    ap.add_argument("--passes", type=int, default=8)
    ap.add_argument("--samples", type=int, default=50_000)
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    a = ap.parse_args()
    m = bench_mesh(MESHES / "stanford-bunny.obj", int(float(a.faces))).to("numpy")
    V, F = np.asarray(m.V), np.asarray(m.F)
    if a.device == "gpu":
        m = m.to("cupy")
    original = C.collapse_round
    for mode in a.modes.split(","):
        kind, fraction = mode.split(":")
        checked = [0]
        OC.collapse_round = lazy_round(a.passes, checked) if kind == "lazy" else original  # type: ignore[assignment]
        D.CANDIDATE_FRACTION = float(fraction)
        t = time.perf_counter()
        r = D.decimate(m, D.Params(target_ratio=a.ratio))
        seconds = time.perf_counter() - t
        out = r.mesh.to("numpy")
        h = dq.hausdorff(V, F, np.asarray(out.V), np.asarray(out.F), a.samples)
        print(
            f"{mode}: faces {len(F)} -> {out.n_faces}, rounds {r.report['rounds']}, "
            f"{seconds:.2f} s, checked {checked[0] or 'all candidates'}, "
            f"hausdorff/diag {h['hausdorff']:.2e}, mean/diag {h['mean']:.2e}",
            flush=True,
        )
    OC.collapse_round = original


if __name__ == "__main__":
    main()
