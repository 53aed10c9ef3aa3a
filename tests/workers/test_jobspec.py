"""The job spec: one model for the API and the workers, its defaults stated once, every stored
spec parsed back as it was accepted; the supervisor's imports take no CuPy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from service.schemas import JobCreate
from tests.conftest import ROOT
from workers.engine.errors import InputError, SpecError
from workers.engine.ops import OPS
from workers.jobspec import JobSpec

#: parameters for the operations that have required ones
REQUIRED = {"geodesic_distance": {"sources": [0]}, "average_attribute": {"attribute": "normal"}}


def test_the_api_validates_with_the_workers_model():
    """``JobCreate`` is the API's (and the OpenAPI document's) name for the model, nothing more."""
    assert issubclass(JobCreate, JobSpec)
    api, worker = JobCreate.model_json_schema(), JobSpec.model_json_schema()
    assert api["properties"] == worker["properties"] and api["$defs"] == worker["$defs"]


def test_a_stored_spec_without_options_gets_the_defaults():
    spec = JobSpec.from_stored({})
    assert spec.pipeline == [] and spec.device == "auto" and spec.callback_url is None
    out = spec.output
    assert (out.format, out.attributes, out.polygons, out.matrix_format) == (
        "ply",
        None,
        True,
        "npz",
    )
    assert spec.deadline_seconds is None and spec.deadline(3600) == 3600.0
    assert JobSpec.from_stored({"deadline_seconds": 20}).deadline(3600) == 20.0
    assert JobSpec.from_stored(None) == spec


@pytest.mark.parametrize("op", OPS.names())
def test_every_step_comes_back_from_the_record_as_accepted(op):
    text = json.dumps(
        {
            "pipeline": [{"op": op, **REQUIRED.get(op, {})}],
            "output": {"format": "obj", "polygons": False, "matrix_format": "mtx"},
            "device": "cpu",
            "deadline_seconds": 30,
            "callback_url": "https://example.com/hook",
        }
    )
    accepted = JobCreate.model_validate_json(text, strict=True)
    stored = json.loads(json.dumps(accepted.model_dump(mode="json")))  # through the record
    back = JobSpec.from_stored(stored)
    assert back.model_dump(mode="json") == stored
    assert type(back.pipeline[0]) is type(accepted.pipeline[0])


def test_a_stored_spec_this_version_cannot_read_is_an_input_error():
    with pytest.raises(SpecError) as info:
        JobSpec.from_stored({"pipeline": [{"op": "no_such_op"}], "output": {"format": "ply"}})
    err = info.value
    assert isinstance(err, InputError)  # never retried
    assert err.code == "spec.invalid" and err.detail["errors"][0]["loc"][0] == "pipeline"


def test_the_supervisor_and_the_spec_import_no_cupy():
    """The supervisor must outlive any CUDA fault: importing it (and the job spec's model, and
    the child's module, which imports CuPy only once a job runs) never touches CuPy."""
    code = (
        "import sys\n"
        "tried = []\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('cupy', 'cupyx', 'cupy_backends'):\n"
        "            tried.append(name)\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import workers.supervisor, workers.jobspec, workers.gpu_child, workers.messages\n"
        "print(tried)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
