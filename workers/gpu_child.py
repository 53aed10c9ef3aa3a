"""The long-lived child process that owns the compute context (the CUDA context on a GPU host).

The supervisor starts it with the ``spawn`` method (never fork after CUDA is up) and talks to it
over a pipe: it receives ``("run", job)`` and answers ``("progress", p, stage)`` messages, then one
``("done", fields)`` or ``("failed", error_dict, retryable)``. It lives across jobs so that
compiled kernels and the memory pool are reused; the supervisor kills and respawns it when a job
times out, is cancelled, or the process dies.
"""

from __future__ import annotations

import logging
import os
import signal
import traceback
from multiprocessing.connection import Connection
from typing import Any

log = logging.getLogger(__name__)


def child_main(
    conn: Connection, blob_root: str | dict[str, Any], log_level: int = logging.INFO
) -> None:
    """Entry point of the child process; ``blob_root`` is what ``open_store`` takes."""
    logging.basicConfig(level=log_level, format=f"%(asctime)s child[{os.getpid()}] %(message)s")
    # the supervisor decides when we stop (a Ctrl-C or a SIGTERM to the whole process group must
    # not kill a job the supervisor is still letting finish); it uses SIGKILL. The supervisor
    # already starts us with both ignored, so that no signal is lost before this point.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from .engine.errors import EngineError, InputError
    from .queue.blobs import open_store
    from .runner import execute

    store = open_store(blob_root)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "stop":
            return
        if msg[0] != "run":
            continue
        job: dict[str, Any] = msg[1]

        def progress(p: float, stage: str) -> None:
            conn.send(("progress", p, stage))

        try:
            fields = execute(
                job["id"],
                job["attempt"],
                job["spec"],
                store,
                progress,
                input_name=job.get("input_name", ""),
            )
            conn.send(("done", fields))
        except InputError as exc:
            conn.send(("failed", exc.to_dict(), False))
        except EngineError as exc:
            conn.send(("failed", exc.to_dict(), True))
        except MemoryError:
            conn.send(
                (
                    "failed",
                    {"code": "resources.out_of_memory", "message": "out of memory", "detail": {}},
                    True,
                )
            )
        except Exception as exc:
            log.error("job %s failed: %s", job["id"], traceback.format_exc())
            conn.send(
                (
                    "failed",
                    {
                        "code": "engine.internal",
                        "message": "internal error",
                        "detail": {"exception": f"{exc.__class__.__name__}: {exc}"[:500]},
                    },
                    True,
                )
            )
