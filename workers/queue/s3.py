"""An S3-compatible blob store (AWS S3, SeaweedFS, MinIO, R2...), selected by a blob URL
``s3://bucket/prefix``. Same interface and key rules as :class:`~.blobs.LocalBlobStore`.

Large blobs go up as multipart uploads (boto3's transfer manager, above
``multipart_threshold`` bytes, in parts of that size); a PUT is atomic in S3, so a reader never
sees half a blob. ``presigned_url`` gives a time-limited download URL that the API may redirect
clients to, so result bytes need not pass through the API. boto3 is imported only here (the
``s3`` extra): a local store never needs it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, urlsplit

from .blobs import BlobNotFound, ChunkReader, Chunks, check_key

MIN_PART = 5 << 20  # S3's smallest part (all but the last)


class S3BlobStore:
    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        multipart_threshold: int = 64 << 20,
        create_bucket: bool = False,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError(f"not an S3 URL: {url!r} (s3://bucket/prefix)")
        try:
            import boto3
            from boto3.s3.transfer import TransferConfig
            from botocore.config import Config
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError("the S3 blob store needs boto3: pip install 'tessera[s3]'") from exc
        self.bucket = parts.netloc
        prefix = parts.path.strip("/")
        self.prefix = f"{check_key(prefix)}/" if prefix else ""
        self.client = boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region or "us-east-1",
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            config=Config(
                signature_version="s3v4",
                s3={"addressing_style": "path"} if endpoint_url else {},
                retries={"max_attempts": 5, "mode": "standard"},
            ),
        )
        part = max(int(multipart_threshold), MIN_PART)
        self.transfer = TransferConfig(multipart_threshold=part, multipart_chunksize=part)
        self._errors = self.client.exceptions
        if create_bucket and not self._bucket_exists():
            self.client.create_bucket(Bucket=self.bucket)

    def _bucket_exists(self) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
            return True
        except ClientError:
            return False

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    @staticmethod
    def _missing(exc: Exception) -> bool:
        code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
        return code in ("404", "NoSuchKey", "NotFound")

    def put_bytes(self, key: str, data: bytes) -> int:
        self.client.upload_fileobj(
            io.BytesIO(data), self.bucket, self._key(key), Config=self.transfer
        )
        return len(data)

    def put_chunks(self, key: str, chunks: Chunks) -> int:
        """The blob made of ``chunks`` in order, streamed: a blob over the multipart threshold
        goes up part by part as the chunks come, never whole in memory."""
        raw = ChunkReader(chunks)
        reader = io.BufferedReader(raw, buffer_size=1 << 20)
        self.client.upload_fileobj(reader, self.bucket, self._key(key), Config=self.transfer)
        return raw.size

    def get_bytes(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            obj = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if self._missing(exc):
                raise BlobNotFound(key) from None
            raise
        data: bytes = obj["Body"].read()
        return data

    def open(self, key: str) -> BinaryIO:
        """A streaming reader of the blob (the caller closes it)."""
        from botocore.exceptions import ClientError

        try:
            obj = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if self._missing(exc):
                raise BlobNotFound(key) from None
            raise
        return obj["Body"]  # type: ignore[no-any-return]

    def local_path(self, key: str) -> Path | None:
        check_key(key)
        return None

    def size(self, key: str) -> int:
        from botocore.exceptions import ClientError

        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if self._missing(exc):
                raise BlobNotFound(key) from None
            raise
        return int(head["ContentLength"])

    def exists(self, key: str) -> bool:
        try:
            self.size(key)
            return True
        except BlobNotFound:
            return False

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def _list(self, prefix: str) -> list[str]:
        base = self._key(prefix.rstrip("/"))
        out: list[str] = []
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=base + "/"
        )
        for page in pages:
            out.extend(obj["Key"] for obj in page.get("Contents", []))
        return out

    def delete_prefix(self, prefix: str) -> int:
        self.abort_unfinished(prefix)
        full = self._list(prefix)
        exact = self._key(prefix.rstrip("/"))
        if not full and self.exists(prefix.rstrip("/")):
            full = [exact]
        for i in range(0, len(full), 1000):
            batch = [{"Key": k} for k in full[i : i + 1000]]
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
        return len(full)

    def list_prefix(self, prefix: str) -> list[str]:
        return sorted(k[len(self.prefix) :] for k in self._list(prefix))

    def abort_unfinished(self, prefix: str) -> int:
        """Abort the multipart uploads under ``prefix`` that a killed writer left open (S3 keeps
        their parts, and bills them, until then). Only for writers known dead. Their count."""
        base = self._key(prefix.rstrip("/")) + "/"
        pages = self.client.get_paginator("list_multipart_uploads").paginate(
            Bucket=self.bucket, Prefix=base
        )
        n = 0
        for page in pages:
            for up in page.get("Uploads", []):
                self.client.abort_multipart_upload(
                    Bucket=self.bucket, Key=up["Key"], UploadId=up["UploadId"]
                )
                n += 1
        return n

    # ---------------------------------------------- objects outside the store's own keys
    # (a batch's input and output prefixes: the caller checks they are allowed)
    def list_objects(
        self, bucket: str, prefix: str, limit: int, keep: Callable[[str], bool] = bool
    ) -> tuple[list[tuple[str, int]], int]:
        """``(key, size)`` of the objects under ``prefix`` in ``bucket`` that ``keep`` keeps,
        in key order, at most ``limit + 1`` of them (one more than ``limit`` tells there are
        too many); and how many others were passed over."""
        out: list[tuple[str, int]] = []
        other = 0
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for page in pages:
            for obj in page.get("Contents", []):
                if not keep(obj["Key"]):
                    other += 1
                    continue
                out.append((obj["Key"], int(obj["Size"])))
                if len(out) > limit:
                    return out, other
        return out, other

    def get_object(self, bucket: str, key: str, max_bytes: int) -> bytes:
        """An object's bytes; :class:`BlobNotFound` when there is none, ``ValueError`` when it
        is larger than ``max_bytes``."""
        from botocore.exceptions import ClientError

        try:
            obj = self.client.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if self._missing(exc):
                raise BlobNotFound(key) from None
            raise
        with obj["Body"] as body:
            if int(obj.get("ContentLength") or 0) > max_bytes:
                raise ValueError(f"{key} is larger than {max_bytes} bytes")
            data: bytes = body.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ValueError(f"{key} is larger than {max_bytes} bytes")
        return data

    def put_object(self, bucket: str, key: str, data: bytes) -> None:
        self.client.upload_fileobj(io.BytesIO(data), bucket, key, Config=self.transfer)

    def copy_to(self, key: str, bucket: str, dest: str) -> None:
        """Copy the store's blob ``key`` to ``dest`` in ``bucket``, inside the S3 service (the
        bytes do not pass through here)."""
        self.client.copy(
            {"Bucket": self.bucket, "Key": self._key(key)}, bucket, dest, Config=self.transfer
        )

    def presigned_url(
        self, key: str, *, expires: int, filename: str | None = None, media_type: str | None = None
    ) -> str:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": self._key(key)}
        if filename:
            quoted = quote(filename)
            params["ResponseContentDisposition"] = (
                f'attachment; filename="{filename}"'
                if quoted == filename
                else f"attachment; filename*=utf-8''{quoted}"
            )
        if media_type:
            params["ResponseContentType"] = media_type
        url: str = self.client.generate_presigned_url(
            "get_object", Params=params, ExpiresIn=int(expires)
        )
        return url
