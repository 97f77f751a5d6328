"""What every on-disk record shares: the version, kept extra keys, and the tolerant value types.

A record keeps every key it does not know (``extra="allow"``): a key a user or
another tool added to ``result.json`` survives a read and a rewrite, and a
record written by a newer BenchFlow keeps the fields this one does not know.
"""

import json
from typing import Annotated, Any

from pydantic import AllowInfNan, BaseModel, BeforeValidator, ConfigDict, Field, Strict

SCHEMA_VERSION = 1
"""The version of every record this BenchFlow writes (``config``, ``result``, job documents).

Records without ``schema_version`` (BenchFlow 0.7) are read through
:func:`benchflow.records.upgrade`."""


def _require_version(schema: dict[str, Any]) -> None:
    """Every record this version writes has ``schema_version``: the published schema requires it."""
    schema["required"] = ["schema_version", *[k for k in schema.get("required", []) if k != "schema_version"]]


class Record(BaseModel):
    """Base of the on-disk records: extra keys kept, field names as on disk."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=_require_version,
                              defer_build=True)

    schema_version: int = Field(SCHEMA_VERSION, description="Version of this record's shape; "
                                "records without it are BenchFlow 0.7 records, read through upgrade().")

    def to_json(self) -> dict[str, Any]:
        """The record as written to disk: field names (and aliases) as the contracts give them."""
        return self.model_dump(mode="json", by_alias=True)


class Block(BaseModel):
    """A nested block of a record; unknown keys kept like the record's own."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


def _text(value: Any) -> Any:
    """A message recorded as something other than text (a dict, a list) is kept as its JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=str)


Text = Annotated[str | None, BeforeValidator(_text)]
"""An error or message: text, or None."""

Number = Annotated[float, Strict(), AllowInfNan(False)] | None
"""A finite number or None: text such as ``"1.0"`` is not a number here (a reward must be one), and NaN
or an infinity (which strict JSON cannot hold) is left out with a note, like any wrong-typed value."""
