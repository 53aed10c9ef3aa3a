"""Settings shared by the API and the workers, read once from ``TESSERA_*`` variables."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .engine.backend import GPU_MIN_FACES


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TESSERA_", frozen=True, extra="ignore", populate_by_name=True
    )

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Redis holding jobs and queues.",
        validation_alias=AliasChoices("TESSERA_REDIS_URL", "REDIS_URL"),
    )
    data_dir: Path = Field(Path("./tessera-data"), description="Root of the local blob store.")
    lease_seconds: float = Field(20.0, gt=0, description="A running job's lease; renewed at 1/4.")
    max_attempts: int = Field(3, ge=1, le=20, description="Runs of a job before it fails for good.")
    job_ttl_seconds: int = Field(
        7 * 24 * 3600,
        ge=60,
        description="How long a job's record and result are kept after it ends (a job that "
        "never ends is cancelled and dropped this long after it was submitted).",
    )
    tombstone_seconds: int = Field(
        30 * 24 * 3600, ge=60, description="How long an expired job still answers 410."
    )
    default_deadline_seconds: int = Field(3600, ge=1, description="Run time allowed to a job.")
    max_upload_bytes: int = Field(
        1 << 30, ge=1024, description="Largest accepted request body (batches: see below)."
    )
    batch_max_upload_bytes: int = Field(
        16 << 30,
        ge=1024,
        description="Largest body of POST /v1/batches (a dataset's archive: 10,000 meshes of "
        "1k to 70k faces are 4.75 GB of OBJ). A body over 64 MiB is spooled to a temporary "
        "file, not held in memory.",
    )
    max_expanded_bytes: int = Field(
        4 << 30, ge=1024, description="Largest size a compressed upload may expand to."
    )
    shutdown_grace_seconds: float = Field(
        30.0, ge=0, description="On SIGTERM, how long the current job may still run."
    )
    gpu_min_faces: int = Field(
        GPU_MIN_FACES,
        ge=0,
        description="device auto runs meshes with fewer faces on the CPU (GPU launches would "
        "cost more than the work); 0: always the GPU when there is one.",
    )
    warm_up: bool = Field(
        True,
        description="Each compute child runs a small job on its backends when it starts, so "
        "the first real job does not pay for loading and compiling GPU kernels.",
    )
    worker_name: str | None = Field(None, description="Consumer name; host:pid when unset.")
    blob_url: str | None = Field(
        None, description="s3://bucket/prefix for an S3-compatible blob store; local when unset."
    )
    s3_endpoint_url: str | None = Field(
        None, description="The S3 endpoint (SeaweedFS, MinIO...); AWS when unset."
    )
    s3_region: str | None = Field(None, description="The S3 region (us-east-1 when unset).")
    s3_access_key_id: str | None = Field(None, description="S3 credentials (else AWS_* / roles).")
    s3_secret_access_key: str | None = Field(None, description="S3 credentials.")
    s3_multipart_threshold_bytes: int = Field(
        64 << 20, ge=5 << 20, description="Blobs above this go up as multipart, in parts this size."
    )
    s3_create_bucket: bool = Field(False, description="Create the bucket at start if missing.")
    s3_presign_seconds: int = Field(
        0,
        ge=0,
        le=7 * 24 * 3600,
        description="With S3: results answer 307 to a presigned URL valid this long (0: the API "
        "streams them).",
    )
    api_keys: dict[str, Any] = Field(
        default_factory=dict,
        description="API keys (JSON): key id -> secret, or -> {secret, revoked, webhook_secret}. "
        "Without keys (here or in api_keys_file) the API is open.",
    )
    api_keys_file: Path | None = Field(
        None, description="A JSON file of API keys as in api_keys, read again when it changes."
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description='Origins (JSON list, e.g. ["https://app.example"]) whose pages may call '
        "the API from a browser; none by default (the API's own page needs none).",
    )
    batch_max_items: int = Field(100_000, ge=1, description="Most files one batch may hold.")
    batch_max_member_bytes: int = Field(
        256 << 20,
        ge=1,
        description="A batch's member larger than this fails alone (batch.member_too_large).",
    )
    batch_chunk_items: int = Field(
        128,
        ge=1,
        le=10_000,
        description="Most items in one chunk of a batch (a unit of work; its small meshes are "
        "packed together: 10,000 meshes took 38.6 s in chunks of 32, 31.3-33.2 s in chunks of "
        "125 on the H100 host).",
    )
    batch_chunk_bytes: int = Field(
        64 << 20, ge=1, description="A chunk of a batch is closed once its files reach this."
    )
    batch_s3_prefixes: list[str] = Field(
        default_factory=list,
        description="The S3 prefixes (JSON list of s3://bucket/prefix/) a batch may read its "
        "files from and write its results to, on an S3 blob store; empty: anywhere in the "
        "store's own bucket outside the store's keys. The service's credentials read them: "
        "list only what every caller may read and write.",
    )
    webhook_secret: str | None = Field(
        None, min_length=16, description="Signs the webhooks of jobs submitted without a key."
    )
    webhook_max_attempts: int = Field(8, ge=1, le=30, description="Deliveries tried per webhook.")
    webhook_backoff_seconds: float = Field(
        2.0, gt=0, description="Wait before the second delivery try; doubles after each."
    )
    webhook_timeout_seconds: float = Field(10.0, gt=0, description="Time allowed per delivery.")

    @property
    def blob_root(self) -> Path:
        return self.data_dir / "blobs"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
