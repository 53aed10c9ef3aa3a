"""Request body size limit, enforced while the body streams in (uvicorn has none).

A declared ``Content-Length`` over the limit is answered 413 before a byte of the body is read;
a chunked or lying body is cut off at the first byte over the limit, and whatever the application
had started to answer is replaced by the 413.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    """``max_bytes`` for every body; ``paths``: other limits for POSTs to some paths (a batch's
    archive may be far larger than a job's mesh)."""

    def __init__(self, app: ASGIApp, max_bytes: int, paths: dict[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.paths = {p.rstrip("/"): n for p, n in (paths or {}).items()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        if scope["method"] == "POST":
            limit = self.paths.get(scope.get("path", "").rstrip("/"), limit)
        declared = None
        for k, v in scope.get("headers", []):
            if k == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    declared = None
        if declared is not None and declared > limit:
            await self._reject(send, limit, declared)
            return
        seen = 0
        exceeded = False
        started = False

        async def limited_receive() -> Message:
            nonlocal seen, exceeded
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    exceeded = True
                    raise BodyTooLarge()
            return msg

        async def guarded_send(msg: Message) -> None:
            nonlocal started
            if exceeded:
                return  # the application's answer to a cut-off body is replaced below
            started = True
            await send(msg)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except BodyTooLarge:
            pass
        except Exception:
            if not exceeded:
                raise
        if exceeded and not started:
            await self._reject(send, limit, None)

    async def _reject(self, send: Send, limit: int, declared: int | None) -> None:
        ctx: dict[str, Any] = {"limit_bytes": limit}
        if declared is not None:
            ctx["declared_bytes"] = declared
        body = json.dumps(
            {
                "type": "urn:tessera:problem:upload.too_large",
                "title": "Content too large",
                "status": 413,
                "detail": "the request body is larger than the upload limit",
                "code": "upload.too_large",
                "context": ctx,
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
