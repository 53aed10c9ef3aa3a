"""``python -m bench.assets``: the shared textured assets through weld, decimation to half and
remeshing, as a user's job would take them: time of the pipeline (the carrying of UVs and
materials included), faces, how the result looks against the input (the share of faces with
the material of the input surface under them, and the mean colour difference, 0-255 per
channel, of the texture seen through the result's UVs against the input's nearest point: the
measure ``tests/workers/engine/test_assets.py`` holds), the faces folded in texture space
(``report.texture``), and the GLB's size plain and Draco-compressed.

``--device cpu|gpu``; ``--skip NAME:KIND`` leaves a case out (the CPU twin remeshes
2CylinderEngine in minutes). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import time

from tests.workers.engine.test_assets import NAMES, PIPELINES, _input, _look
from workers.engine.io import serialize


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.assets", description=__doc__)
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--skip", action="append", default=[], metavar="NAME:KIND")
    args = ap.parse_args()
    print(
        "| asset | pipeline | faces in | faces out | seconds | same material | colour error "
        "| folded | GLB bytes | Draco GLB bytes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in NAMES:
        src = _input(name)
        for kind, pipeline in PIPELINES.items():
            if f"{name}:{kind}" in args.skip:
                continue
            src.run(pipeline[:1], device=args.device)  # warm: kernels, caches
            t = time.perf_counter()
            result = src.run(pipeline, device=args.device)
            seconds = time.perf_counter() - t
            out = result.mesh.to("numpy")
            look = _look(name, out)
            texture = result.steps[-1].report.get("texture") or {}
            plain = len(serialize(out, "glb"))
            packed = len(serialize(out, "glb", compression="draco"))
            print(
                f"| {name} | {kind} | {src.n_faces} | {out.n_faces} | {seconds:.2f} | "
                f"{look['same_material']:.4f} | {look['colour']:.2f} | "
                f"{texture.get('folded_faces', '')} | {plain} | {packed} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
