"""The API fuzzed from its own OpenAPI document (schemathesis): generated requests, valid and
not, never get a server error, and every answer conforms to the document (status codes, content
types, bodies)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import positive_data_acceptance

from service.main import create_app
from workers.settings import Settings

pytestmark = pytest.mark.slow


class _App:
    """The application under test, swapped per test (schemathesis binds one ASGI app when the
    schema is loaded, at import; the real one needs the test's Redis and data directory)."""

    def __init__(self) -> None:
        self.app: Any = create_app(Settings())  # serves /openapi.json; touches no Redis

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


APP = _App()
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(autouse=True)
def _app_under_test(settings):
    from fastapi.testclient import TestClient

    APP.app = create_app(settings)
    with TestClient(APP.app):  # runs the lifespan: the Redis pool and the blob store
        yield


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case):
    excluded = []
    if case.path == "/readyz":
        excluded.append(not_a_server_error)  # 503 is its documented answer with no worker
    if case.path in ("/v1/jobs", "/v1/batches") and case.method == "POST":
        # the spec travels as a JSON string (any string is schema-valid) and the mesh as bytes:
        # their validity is beyond the document, so a schema-valid body may well be a 422
        excluded.append(positive_data_acceptance)
    case.call_and_validate(excluded_checks=excluded)
