"""Batches whose files are read from an S3 prefix, and whose results may go to one.

The API lists the input prefix and makes an item of each mesh file there (nothing is copied:
a chunk's record names the prefix, ``s3``, and its worker reads each item's object itself).
Each result is written to the blob store as any batch item's is; with an output prefix it is
also copied there (inside S3) at the item's output path, and once the batch has ended its
``manifest.jsonl`` is written beside them (:func:`write_manifest`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import urlsplit

from . import keys
from .batches import BatchQueue, manifest_line

log = logging.getLogger(__name__)

MANIFEST = "manifest.jsonl"


def split_url(url: str) -> tuple[str, str] | None:
    """``s3://bucket/some/prefix/`` -> ``("bucket", "some/prefix/")`` (the prefix empty or
    ending with ``/``); None when it is not such a URL."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        return None
    segments = [p for p in parts.path.split("/") if p]
    if any(p in (".", "..") for p in segments):
        return None
    return parts.netloc, "".join(f"{p}/" for p in segments)


def write_manifest(batches: BatchQueue, store: Any, batch_id: str) -> bool:
    """Once the batch has ended, write its ``manifest.jsonl`` under its output prefix (once:
    every caller that sees it ended may call this; a second write would be the same bytes).
    Whether it was written now."""
    written, s3 = batches.r.hmget(keys.batch(batch_id), "manifest_at", "s3")
    out = (json.loads(s3) or {}).get("output") if s3 else None
    if written is not None or not out:
        return False
    view = batches.get(batch_id)
    if view is None or not view.finished:
        return False
    view = batches.get(batch_id, items=True)
    assert view is not None
    lines = [json.dumps(manifest_line(item)) for item in view.items or []]
    store.put_object(out["bucket"], out["prefix"] + MANIFEST, ("\n".join(lines) + "\n").encode())
    batches.r.hsetnx(keys.batch(batch_id), "manifest_at", repr(time.time()))
    log.info("batch %s: manifest written to s3://%s/%s", batch_id, out["bucket"], out["prefix"])
    return True
