"""The catalogue is derived from the registry: every operation, its JSON schema, its outputs."""

from __future__ import annotations

from tests.service.helpers import assert_problem
from workers.engine.ops import OPS


def test_catalogue_lists_every_operation_with_its_schema(client):
    body = client.get("/v1/operations").json()
    assert body["count"] == len(OPS)
    names = [op["name"] for op in body["data"]]
    assert names == OPS.names()
    weld = body["data"][names.index("weld")]
    tol = weld["params"]["properties"]["tolerance"]
    assert tol["minimum"] == 0 and tol["default"] == 0 and tol["description"]
    vn = body["data"][names.index("vertex_normals")]
    assert vn["params"]["properties"]["weighting"]["enum"] == ["area", "angle", "uniform", "max"]
    assert vn["outputs"]["vertex_normals"]["element"] == "vertex"
    assert "cpu" in vn["backends"]


def test_one_operation_and_unknown(client):
    assert client.get("/v1/operations/gaussian_curvature").json()["kind"] == "static"
    assert_problem(client.get("/v1/operations/nope"), 404, "operation.not_found")


def test_job_schema_is_a_union_over_ops(client):
    schema = client.get("/openapi.json").json()
    job = schema["components"]["schemas"]["JobCreate"]
    steps = job["properties"]["pipeline"]["items"]
    mapping = steps["discriminator"]["mapping"]
    assert set(mapping) == set(OPS.names())


def test_catalogue_serves_each_full_description(client):
    body = client.get("/v1/operations").json()
    served = {op["name"]: op for op in body["data"]}
    for op in OPS:
        assert served[op.name]["description"] == op.description
        assert served[op.name]["kind"] == op.kind.value
    one = client.get("/v1/operations/geodesic_distance").json()
    assert one["description"] != one["summary"]
    assert "op.heat_underflow" in one["description"] and "propagation" in one["description"]
    assert client.get("/v1/operations/decimate").json()["kind"] == "dynamic"


def test_job_schema_steps_carry_summary_and_description(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    step = schemas["GeodesicDistanceStep"]
    op = OPS.get("geodesic_distance")
    assert step["description"] == f"{op.summary}\n\n{op.description}"
    assert "dynamic" in schemas["OpKind"]["enum"]
