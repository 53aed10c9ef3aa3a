"""``tessera submit`` and ``tessera batch``: files through a running service.

tessera submit FILE... [--op NAME[:k=v,...]]... [-o OUT] [--format F] [--url URL]
tessera batch DIR --pipeline pipeline.json|.yaml --out DIR [--concurrency N] [--url URL]
tessera batch --server-side --s3-input s3://... [--s3-output s3://...] [--out DIR] --pipeline ...

Both run the files as jobs, a few at a time, with a progress line (plain lines when the output is
not a terminal) and a summary table, and exit 1 when any file failed. A result is written to a
temporary file and renamed into place, so an existing output means a finished file. ``batch``
records what made each result beside it (``.NAME.tessera.json``: a digest of the job spec and the
input's bytes, the spec itself, the job) and skips a result only when that record matches the
present spec and input: a re-run resumes where an interrupted one stopped, and a result made by
another pipeline (or from an input since changed, or with no record) is made again, and the run
says so. Each file's submission carries an ``Idempotency-Key`` made from the same digest, so a
retried or resumed run reattaches to the job it already started instead of starting another.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from . import errors
from ._common import TERMINAL, RetryPolicy, build_spec
from .client import AsyncClient

# what the engine reads (MESH_FORMATS, plus archives) and writes (OUTPUT_FORMATS); a test keeps
# these equal to the engine's lists without the client importing the engine
INPUT_SUFFIXES = (".obj", ".ply", ".stl", ".off", ".glb", ".gltf", ".npz", ".zip", ".gz")
OUTPUT_FORMATS = ("ply", "obj", "objzip", "off", "stl", "glb", "npz")
#: a result file's extension where it is not the format's name (the engine's FILE_EXTENSIONS)
OUTPUT_EXTENSIONS = {"objzip": "zip"}
TRIANGULATE_HELP = (
    "write Catmull-Clark quads and dual polygons as triangles (OBJ, PLY and OFF write polygons "
    "by default)"
)
COMPRESSION_HELP = (
    "draco: compress a GLB result's triangles (KHR_draco_mesh_compression; quantized, often a "
    "tenth of the size)"
)


# ----------------------------------------------------------------------------- parsing
def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets, braces and quotes: ``a=[1,2],b=x`` → two pairs."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def parse_op(text: str) -> dict[str, Any]:
    """``name`` or ``name:k=v,k=v`` → ``{"op": name, k: v...}``. Values are read as JSON when
    they parse (numbers, true/false, null, lists such as ``sources=[0,12]``), else kept as
    strings."""
    name, _, rest = text.partition(":")
    step: dict[str, Any] = {"op": name.strip()}
    if rest.strip():
        for pair in _split_top(rest):
            k, eq, v = pair.partition("=")
            if not eq or not k.strip():
                raise SystemExit(f"tessera: bad parameter {pair!r} in --op {text!r} (use k=v)")
            try:
                step[k.strip()] = json.loads(v)
            except json.JSONDecodeError:
                step[k.strip()] = v
    return step


def load_pipeline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A job spec from a JSON or YAML file: either the whole spec (``{"pipeline": [...],
    "output": {...}}``) or just the list of steps (names or ``{"op": ...}`` objects)."""
    p = Path(path)
    text = p.read_text()
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SystemExit(f"tessera: {p}: not valid YAML: {exc}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"tessera: {p}: not valid JSON: {exc}") from None
    if isinstance(data, list):
        data = {"pipeline": data}
    if not isinstance(data, dict) or not isinstance(data.get("pipeline", []), list):
        raise SystemExit(f"tessera: {p}: expected a list of steps or an object with 'pipeline'")
    data["pipeline"] = [{"op": s} if isinstance(s, str) else s for s in data.get("pipeline", [])]
    return data


def stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".zip"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name.rsplit(".", 1)[0] if "." in name else name


# ----------------------------------------------------------------------------- running
@dataclass
class Item:
    label: str
    inputs: list[Path]
    output: Path


@dataclass
class Outcome:
    item: Item
    status: str  # succeeded, failed, skipped
    seconds: float = 0.0
    code: str = ""
    message: str = ""
    job_id: str = ""
    faces: int | None = None
    redone: str = ""  # why an existing result was made again


@dataclass
class Board:
    """The progress line: counts, and the jobs in flight with their progress."""

    total: int
    stream: TextIO
    tty: bool
    running: dict[str, float] = field(default_factory=dict)
    finished: list[Outcome] = field(default_factory=list)
    _last: float = 0.0

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.finished)

    def line(self) -> str:
        head = (
            f"[{len(self.finished)}/{self.total}] ok {self.count('succeeded')}  failed "
            f"{self.count('failed')}  skipped {self.count('skipped')}  running {len(self.running)}"
        )
        if self.running:
            label, p = next(iter(self.running.items()))
            head += f"  {label} {p * 100:3.0f}%"
        return head

    def show(self, force: bool = False) -> None:
        if not self.tty:
            return
        now = time.monotonic()
        if force or now - self._last > 0.1:
            self._last = now
            self.stream.write("\r\033[K" + self.line()[:200])
            self.stream.flush()

    def finish(self, o: Outcome) -> None:
        self.finished.append(o)
        self.running.pop(o.item.label, None)
        if self.tty:
            self.show(force=True)
        else:
            what = o.code if o.status == "failed" else str(o.item.output)
            if o.redone:
                what += f" (made again: {o.redone})"
            head = f"[{len(self.finished)}/{self.total}]"
            self.stream.write(f"{head} {o.status} {o.item.label}: {what}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


#: states of a job that a new run should not reattach to
DEAD = TERMINAL - {"succeeded"}


def idempotency_key(item: Item, spec: dict[str, Any]) -> str:
    """The digest of the job spec and the inputs (names and bytes): the submission's key, and
    the record of what made a result."""
    h = hashlib.sha256(json.dumps(spec, sort_keys=True).encode())
    for p in item.inputs:
        h.update(p.name.encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return "tessera-cli-" + h.hexdigest()[:48]


def record_path(output: Path) -> Path:
    """Where ``batch`` records what made ``output``: a hidden file beside it."""
    return output.with_name(f".{output.name}.tessera.json")


def made_by(output: Path) -> str | None:
    """The digest recorded for ``output`` (None: no readable record)."""
    try:
        rec = json.loads(record_path(output).read_text())
    except (OSError, ValueError):
        return None
    return rec.get("key") if isinstance(rec, dict) else None


def write_record(item: Item, spec: dict[str, Any], key: str, job_id: str) -> None:
    rec = {
        "key": key,
        "spec": spec,
        "inputs": [p.name for p in item.inputs],
        "job": job_id,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = record_path(item.output)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    os.replace(tmp, path)


async def run_one(
    ac: AsyncClient,
    item: Item,
    spec: dict[str, Any],
    board: Board,
    resume: bool,
    timeout: float | None,
    *,
    record: bool = False,
    keep_existing: bool = False,
) -> Outcome:
    """Run one item. ``resume``: an existing result is kept when its record (``record`` writes
    one beside each result) says the same spec and input made it, or always with
    ``keep_existing``; otherwise it is made again and the outcome says why."""
    redone = ""
    key = ""
    if resume and item.output.exists():
        if keep_existing:
            return Outcome(item, "skipped")
        key = await asyncio.to_thread(idempotency_key, item, spec)
        found = await asyncio.to_thread(made_by, item.output)
        if found == key:
            return Outcome(item, "skipped")
        redone = (
            "no record of what made it"
            if found is None
            else "made by another pipeline or from another input"
        )
    t0 = time.monotonic()
    board.running[item.label] = 0.0
    board.show()
    job_id = ""
    try:
        key = key or await asyncio.to_thread(idempotency_key, item, spec)
        job = await ac.submit(item.inputs, spec=spec, idempotency_key=key)
        if job.get("state") in DEAD:
            # the key found an earlier run's job that failed or was cancelled (or has expired):
            # a new run means a new try, under a key derived from that job (so that two runs
            # that meet it again still share their new job)
            key = f"{key}:{job['id'][:12]}"
            job = await ac.submit(item.inputs, spec=spec, idempotency_key=key)
        job_id = job["id"]

        def on_progress(j: dict[str, Any]) -> None:
            board.running[item.label] = float(j.get("progress") or 0.0)
            board.show()

        done = await ac.wait(job_id, progress=on_progress, timeout=timeout)
        item.output.parent.mkdir(parents=True, exist_ok=True)
        await ac.download(job_id, item.output)
        if record:
            await asyncio.to_thread(write_record, item, spec, key, job_id)
    except errors.ServiceUnreachable:
        raise  # no file can succeed: the run stops with one message
    except errors.TesseraError as exc:
        return Outcome(item, "failed", time.monotonic() - t0, exc.code, _detail(exc), job_id)
    except OSError as exc:
        return Outcome(item, "failed", time.monotonic() - t0, "client.os_error", str(exc), job_id)
    faces = (done.get("stats_after") or {}).get("faces")
    return Outcome(
        item, "succeeded", time.monotonic() - t0, job_id=job_id, faces=faces, redone=redone
    )


def _detail(exc: errors.TesseraError) -> str:
    """The problem's words, and where the request was wrong when it says (``errors``)."""
    return "; ".join([exc.detail, *exc.where[:5]])


async def run_items(
    items: list[Item],
    spec: dict[str, Any],
    *,
    url: str | None,
    api_key: str | None,
    concurrency: int,
    resume: bool,
    timeout: float | None,
    stream: TextIO,
    retry: RetryPolicy | None = None,
    board: Board | None = None,
    record: bool = False,
    keep_existing: bool = False,
) -> list[Outcome]:
    board = board or Board(len(items), stream, stream.isatty())
    sem = asyncio.Semaphore(max(concurrency, 1))

    async with AsyncClient(url, api_key=api_key, retry=retry) as ac:

        async def guarded(item: Item) -> Outcome:
            async with sem:
                o = await run_one(
                    ac, item, spec, board, resume, timeout,
                    record=record, keep_existing=keep_existing,
                )  # fmt: skip
            board.finish(o)
            return o

        outcomes = await asyncio.gather(*(guarded(i) for i in items))
    board.close()
    return list(outcomes)


def summary(outcomes: list[Outcome], out: TextIO) -> None:
    rows = [("file", "result", "seconds", "faces", "output / error")]
    for o in outcomes:
        detail = str(o.item.output) if o.status != "failed" else f"{o.code}: {o.message}"
        if o.redone:
            detail += f" (made again: {o.redone})"
        secs = f"{o.seconds:.2f}" if o.status != "skipped" else "-"
        faces = "-" if o.faces is None else str(o.faces)
        # a failure's words whole: they say which field of the spec is wrong and why
        rows.append(
            (o.item.label, o.status, secs, faces, detail if o.status == "failed" else detail[:120])
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4])
        out.write("\n")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("succeeded", "failed", "skipped")}
    out.write(
        f"tessera: {counts['succeeded']} succeeded, {counts['failed']} failed, "
        f"{counts['skipped']} skipped\n"
    )
    redone = [o for o in outcomes if o.redone]
    if redone:
        out.write(
            f"tessera: {len(redone)} existing result(s) made again (not reused): "
            + "; ".join(f"{o.item.output}: {o.redone}" for o in redone[:5])
            + ("; ..." if len(redone) > 5 else "")
            + "\n"
        )


def _finish(outcomes: list[Outcome]) -> int:
    summary(outcomes, sys.stdout)
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _run(
    items: list[Item],
    spec: dict[str, Any],
    args: argparse.Namespace,
    resume: bool,
    record: bool = False,
    keep_existing: bool = False,
) -> int:
    """Run the items with a progress board; on Ctrl-C, the summary of what finished."""
    outputs: dict[Path, str] = {}
    for item in items:  # two inputs writing one file: the second would replace the first
        other = outputs.setdefault(item.output, item.label)
        if other != item.label:
            raise SystemExit(f"tessera: {other} and {item.label} would both write {item.output}")
    board = Board(len(items), sys.stderr, sys.stderr.isatty())
    try:
        outcomes = asyncio.run(
            run_items(
                items,
                spec,
                url=args.url,
                api_key=args.api_key,
                concurrency=args.concurrency,
                resume=resume,
                timeout=args.timeout,
                stream=sys.stderr,
                board=board,
                record=record,
                keep_existing=keep_existing,
            )
        )
    except errors.ServiceUnreachable as exc:
        board.close()
        sys.stderr.write(f"tessera: {exc.detail}\n")
        return 1
    except KeyboardInterrupt:
        board.close()
        summary(board.finished, sys.stdout)
        sys.stderr.write(
            f"tessera: interrupted with {len(board.finished)} of {len(items)} finished; jobs "
            "in flight go on on the server: the same command picks them up again\n"
        )
        return 130
    return _finish(outcomes)


def _format(args: argparse.Namespace, spec: dict[str, Any], out: Path | None) -> str:
    fmt = args.format or (spec.get("output") or {}).get("format")
    if not fmt and out is not None and out.suffix.lstrip(".").lower() in OUTPUT_FORMATS:
        fmt = out.suffix.lstrip(".").lower()
    return fmt or "ply"


def _ext(fmt: str) -> str:
    """The extension of a result file in ``fmt``."""
    return OUTPUT_EXTENSIONS.get(fmt, fmt)


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    spec = load_pipeline(args.pipeline) if getattr(args, "pipeline", None) else {}
    steps = [parse_op(o) for o in getattr(args, "op", None) or []]
    out = dict(spec.get("output") or {})
    if getattr(args, "attribute", None):
        out["attributes"] = args.attribute
    if getattr(args, "triangulate", False):
        out["polygons"] = False
    if getattr(args, "compression", None):
        out["compression"] = args.compression
    return build_spec(
        (spec.get("pipeline", []) + steps) if steps or "pipeline" in spec else None,
        spec=spec,
        output=out or None,
        device=args.device,
    )


# ----------------------------------------------------------------------------- commands
def cmd_submit(args: argparse.Namespace) -> int:
    inputs = [Path(f) for f in args.files]
    for p in inputs:
        if not p.is_file():
            raise SystemExit(f"tessera: {p}: no such file")
    spec = _spec(args)
    out = Path(args.output) if args.output else None
    fmt = _format(args, spec, out if len(inputs) == 1 or args.together else None)
    spec["output"] = {**(spec.get("output") or {}), "format": fmt}
    if args.together:
        target = out or inputs[0].with_name(f"{stem(inputs[0])}.result.{_ext(fmt)}")
        items = [Item(", ".join(p.name for p in inputs), inputs, target)]
    elif out is not None and (len(inputs) > 1 or out.is_dir() or args.output.endswith("/")):
        items = [Item(str(p), [p], out / f"{stem(p)}.{_ext(fmt)}") for p in inputs]
    elif out is not None:
        items = [Item(str(inputs[0]), inputs, out)]
    else:  # next to the inputs
        items = [Item(str(p), [p], p.with_name(f"{stem(p)}.result.{_ext(fmt)}")) for p in inputs]
    return _run(items, spec, args, resume=False)


def find_inputs(root: Path, skip: Path | None) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and (skip is None or (here / d).resolve() != skip)
        )
        for name in sorted(filenames):
            if not name.startswith(".") and name.lower().endswith(INPUT_SUFFIXES):
                found.append(here / name)
    return found


def cmd_batch(args: argparse.Namespace) -> int:
    if args.s3_input or args.s3_output:
        return run_s3(args)
    if args.dir is None or args.out is None:
        raise SystemExit("tessera: batch needs DIR and --out DIR (or --server-side --s3-input)")
    root = Path(args.dir)
    if not root.is_dir():
        raise SystemExit(f"tessera: {root}: not a directory")
    spec = _spec(args)
    fmt = _format(args, spec, None)
    spec["output"] = {**(spec.get("output") or {}), "format": fmt}
    out_root = Path(args.out)
    items = []
    for p in find_inputs(root, out_root.resolve()):
        rel = p.relative_to(root)
        items.append(Item(str(rel), [p], out_root / rel.parent / f"{stem(p)}.{_ext(fmt)}"))
    if not items:
        raise SystemExit(f"tessera: no mesh files under {root}")
    if args.server_side:
        return run_server_side(items, spec, args, resume=not args.force)
    return _run(
        items, spec, args, resume=not args.force, record=True, keep_existing=args.keep_existing
    )


def run_server_side(
    items: list[Item], spec: dict[str, Any], args: argparse.Namespace, resume: bool
) -> int:
    """``batch --server-side``: the files that need a run go up as one archive (one batch on
    the service, items at their relative paths), the result archive comes back and each result
    is written at its place with its record, as the job-per-file run writes them; results kept
    and made again by the same rules."""
    from ._common import zip_pieces

    outcomes: list[Outcome] = []
    todo: list[tuple[Item, str, str]] = []  # item, its key, why an existing result is redone
    for item in items:
        redone = ""
        key = idempotency_key(item, spec)
        if resume and item.output.exists():
            found = made_by(item.output)
            if args.keep_existing or found == key:
                outcomes.append(Outcome(item, "skipped"))
                continue
            redone = (
                "no record of what made it"
                if found is None
                else "made by another pipeline or from another input"
            )
        todo.append((item, key, redone))
    if not todo:
        return _finish(outcomes)
    archive = b"".join(
        zip_pieces(
            [(Path(item.inputs[0]), item.label.replace(os.sep, "/")) for item, _, _ in todo],
            bare=True,
        )
    )
    # the batch's key comes from its files' keys: a re-run of the same files reattaches to it
    # (the archive holds only their names and bytes: a file touched since is the same body)
    batch_key = (
        "tessera-cli-batch-"
        + hashlib.sha256("".join(k for _, k, _ in todo).encode()).hexdigest()[:40]
    )
    with tempfile.TemporaryDirectory(prefix="tessera-batch-") as tmp:
        return _run_batch(archive, batch_key, todo, outcomes, spec, args, Path(tmp) / "r.zip")


def _run_batch(
    archive: bytes,
    batch_key: str,
    todo: list[tuple[Item, str, str]],
    outcomes: list[Outcome],
    spec: dict[str, Any],
    args: argparse.Namespace,
    result: Path,
) -> int:
    import zipfile

    from .client import Client

    t0 = time.monotonic()
    tty = sys.stderr.isatty()

    def progress(b: dict[str, Any]) -> None:
        c = b["counts"]
        line = (
            f"[{c['succeeded'] + c['failed'] + c['cancelled']}/{c['total']}] ok "
            f"{c['succeeded']}  failed {c['failed']}  running {c['running']}"
        )
        sys.stderr.write(("\r\033[K" + line) if tty else line + "\n")
        sys.stderr.flush()

    try:
        with Client(args.url, api_key=args.api_key) as tc:
            batch = tc.submit_batch(archive, spec=spec, idempotency_key=batch_key)
            if batch["state"] in ("cancelled", "expired"):  # an earlier run's: a new try
                batch_key = f"{batch_key}:{batch['id'][:12]}"
                batch = tc.submit_batch(archive, spec=spec, idempotency_key=batch_key)
            sys.stderr.write(f"tessera: batch {batch['id']}: {len(todo)} files\n")
            # the results come down as their items end, beside the run
            done = tc.follow_batch(batch, result, progress=progress, timeout=args.timeout)
            if tty:
                sys.stderr.write("\n")
    except errors.TesseraError as exc:
        sys.stderr.write(f"tessera: {exc.code}: {_detail(exc)}\n")
        return 1
    seconds = time.monotonic() - t0
    with zipfile.ZipFile(result) as zf:
        return _write_results(zf, todo, outcomes, spec, done, seconds)


def _write_results(
    zf: Any,
    todo: list[tuple[Item, str, str]],
    outcomes: list[Outcome],
    spec: dict[str, Any],
    done: dict[str, Any],
    seconds: float,
) -> int:
    """Each result of the batch's archive at its place, with its record."""
    lines = {}
    for raw in zf.read("manifest.jsonl").decode().splitlines():
        line = json.loads(raw)
        lines[line["path"]] = line
    for item, key, redone in todo:
        line = lines.get(item.label.replace(os.sep, "/"))
        if line is None or line["state"] != "succeeded":
            err = (line or {}).get("error") or {}
            code = err.get("code") or f"batch.{(line or {}).get('state', 'missing')}"
            outcomes.append(
                Outcome(item, "failed", seconds, code, err.get("message", ""), done["id"])
            )
            continue
        item.output.parent.mkdir(parents=True, exist_ok=True)
        tmp = item.output.with_name(item.output.name + ".part")
        tmp.write_bytes(zf.read(line["output"]))
        os.replace(tmp, item.output)
        write_record(item, spec, key, done["id"])
        faces = (line.get("stats") or {}).get("faces")
        outcomes.append(
            Outcome(item, "succeeded", seconds, job_id=done["id"], faces=faces, redone=redone)
        )
    return _finish(outcomes)


def run_s3(args: argparse.Namespace) -> int:
    """``batch --server-side --s3-input s3://... [--s3-output s3://...] [--out DIR]``: one batch
    over the mesh files under an S3 prefix, read there by the service's workers; the results go
    under the output prefix (with ``manifest.jsonl``) or, with ``--out``, are unpacked from the
    result archive into DIR. Exit status 1 when an item failed."""
    import io
    import zipfile

    from .client import Client

    if not args.server_side:
        raise SystemExit("tessera: --s3-input runs on the service: add --server-side")
    if not args.s3_input:
        raise SystemExit("tessera: --s3-output needs --s3-input")
    if args.dir is not None:
        raise SystemExit("tessera: --s3-input reads the files from S3: give no DIR")
    if args.out is None and not args.s3_output:
        raise SystemExit("tessera: say where the results go: --s3-output s3://... or --out DIR")
    spec = _spec(args)
    spec["output"] = {**(spec.get("output") or {}), "format": _format(args, spec, None)}
    try:
        with Client(args.url, api_key=args.api_key) as tc:
            batch = tc.submit_batch(
                spec=spec, s3_prefix=args.s3_input, output_prefix=args.s3_output
            )
            sys.stderr.write(f"tessera: batch {batch['id']}: {batch['counts']['total']} files\n")
            done = tc.wait_batch(batch, timeout=args.timeout, items=True)
            result = (
                tc._request("GET", f"/v1/batches/{done['id']}/result").content
                if args.out is not None
                else None
            )
    except errors.TesseraError as exc:
        sys.stderr.write(f"tessera: {exc.code}: {_detail(exc)}\n")
        return 1
    if result is not None:
        out = Path(args.out)
        with zipfile.ZipFile(io.BytesIO(result)) as zf:
            for name in zf.namelist():
                dest = out / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(zf.read(name))
    failed = [i for i in done.get("items") or [] if i["state"] != "succeeded"]
    for item in failed:
        code = (item.get("error") or {}).get("code") or item["state"]
        sys.stderr.write(f"tessera: {item['path']}: {code}\n")
    c = done["counts"]
    where = args.s3_output or args.out
    sys.stderr.write(
        f"tessera: batch {done['id']} {done['state']}: {c['succeeded']} succeeded, "
        f"{c['failed']} failed, {c['cancelled']} cancelled; results in {where}\n"
    )
    return 1 if failed or done["state"] != "succeeded" else 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None, help="the service (default $TESSERA_URL or :8000)")
    p.add_argument("--api-key", default=None, help="API key (default $TESSERA_API_KEY)")
    p.add_argument("--format", choices=OUTPUT_FORMATS, help="result format (default ply)")
    p.add_argument("--triangulate", action="store_true", help=TRIANGULATE_HELP)
    p.add_argument("--compression", choices=["none", "draco"], default=None, help=COMPRESSION_HELP)
    p.add_argument(
        "--attribute", action="append", metavar="NAME", help="attribute to write (default: all)"
    )
    p.add_argument("--device", choices=["auto", "gpu", "cpu"], default=None)
    p.add_argument("--timeout", type=float, default=None, help="seconds to wait for each job")


def add_commands(sub: Any) -> None:
    """Add ``submit`` and ``batch`` to the ``tessera`` command's subparsers."""
    s = sub.add_parser("submit", help="process files with a running service")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("--op", action="append", default=[], metavar="NAME[:k=v,...]")
    s.add_argument("--pipeline", help="the job spec or its steps, JSON or YAML")
    s.add_argument(
        "-o",
        "--output",
        help="result file (one input), or a directory (several); default: next to each input",
    )
    s.add_argument("--together", action="store_true", help="all files as one job (see merge)")
    s.add_argument("--concurrency", type=int, default=4)
    _common(s)
    s.set_defaults(fn=cmd_submit)

    b = sub.add_parser("batch", help="process every mesh under a folder with a running service")
    b.add_argument("dir", metavar="DIR", nargs="?", help="the meshes (not with --s3-input)")
    b.add_argument("--pipeline", required=True, help="the job spec or its steps, JSON or YAML")
    b.add_argument("--out", metavar="DIR", help="results, same layout as DIR")
    b.add_argument("--concurrency", type=int, default=4)
    again = b.add_mutually_exclusive_group()
    again.add_argument("--force", action="store_true", help="redo files whose result exists")
    again.add_argument(
        "--keep-existing",
        action="store_true",
        help="keep every existing result, even one made by another pipeline or from another "
        "input (by default only results recorded as made by this spec and input are kept)",
    )
    b.add_argument(
        "--server-side",
        action="store_true",
        help="send the files as one batch (POST /v1/batches: one upload, one result archive) "
        "instead of one job per file",
    )
    b.add_argument(
        "--s3-input",
        metavar="S3_PREFIX",
        help="with --server-side, on a service whose blob store is S3: every mesh file under "
        "s3://bucket/prefix/, read there by the service (no DIR)",
    )
    b.add_argument(
        "--s3-output",
        metavar="S3_PREFIX",
        help="with --s3-input: write the results and manifest.jsonl under this S3 prefix "
        "(else --out DIR gets the result archive's files)",
    )
    _common(b)
    b.set_defaults(fn=cmd_batch)
