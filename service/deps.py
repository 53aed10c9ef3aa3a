"""Dependencies as ``Annotated`` aliases: the job queue, the blob store, the settings."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from workers.queue.blobs import BlobStore
from workers.queue.jobs import JobQueue

from .config import Settings


def get_queue(request: Request) -> JobQueue:
    return request.app.state.queue  # type: ignore[no-any-return]


def get_store(request: Request) -> BlobStore:
    return request.app.state.store  # type: ignore[no-any-return]


def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


QueueDep = Annotated[JobQueue, Depends(get_queue)]
StoreDep = Annotated[BlobStore, Depends(get_store)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
BaseUrlDep = Annotated[str, Depends(base_url)]
