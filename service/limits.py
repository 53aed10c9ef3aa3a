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
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = None
        for k, v in scope.get("headers", []):
            if k == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    declared = None
        if declared is not None and declared > self.max_bytes:
            await self._reject(send, declared)
            return
        seen = 0
        exceeded = False
        started = False

        async def limited_receive() -> Message:
            nonlocal seen, exceeded
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
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
            await self._reject(send, None)

    async def _reject(self, send: Send, declared: int | None) -> None:
        ctx: dict[str, Any] = {"limit_bytes": self.max_bytes}
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
