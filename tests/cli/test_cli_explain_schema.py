"""``bench explain --schema NAME`` prints the published JSON Schema of a job-folder record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

BEFORE = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "job-before-models"


@pytest.mark.parametrize("name", ["result", "config", "timing", "summary"])
def test_schema_is_printed_as_valid_json_schema(bench, tmp_path, name):
    proc = bench("explain", "--schema", name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    Draft202012Validator.check_schema(schema)
    assert "schema_version" in schema["properties"] or name == "timing"


def test_result_schema_validates_a_result_this_tool_wrote(bench, tmp_path):
    schema = json.loads(bench("explain", "--schema", "result", cwd=tmp_path).stdout)
    validator = Draft202012Validator(schema)
    for result in sorted(BEFORE.glob("*__*/result.json")):
        validator.validate(json.loads(result.read_text()))
    assert not validator.is_valid({"task_name": "t"})  # no schema_version: a 0.7 record, upgrade it first


def test_unknown_schema_is_a_one_line_error(bench, tmp_path):
    proc = bench("explain", "--schema", "results", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "--schema 'results'" in lines[0] and "result, config, timing, summary" in lines[0]
