"""Trainer data writers: JSONL (one row a line) and parquet (verl-sft), both streamed and atomic.

Rows are written as they are made into a temporary file beside the output and
renamed over it at the end (``util.atomic.open_for_write``), so a conversion
of 10,000 rollouts never holds them all, and an error (or a row count other
than ``--expected-rows``) leaves no output file behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO

from benchflow.errors import UserError

PARQUET_BATCH = 500


class JsonlSink:
    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle

    def add(self, row: dict[str, Any]) -> None:
        self.handle.write(json.dumps(row, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n")

    def close(self) -> None:
        pass


def verl_schema() -> Any:
    import pyarrow as pa

    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(call)),
                         ("tool_call_id", pa.string()), ("name", pa.string())])
    return pa.schema([("messages", pa.list_(message)), ("tools", pa.string()), ("reward", pa.float64()),
                      ("task_name", pa.string()), ("agent", pa.string()), ("model", pa.string()),
                      ("exchange_index", pa.int64()), ("source_path", pa.string()), ("group", pa.string()),
                      ("advantage", pa.float64())])


def require_pyarrow() -> None:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise UserError("--format verl-sft writes parquet and needs pyarrow: pip install 'benchflow[train]'") from None


class ParquetSink:
    def __init__(self, handle: BinaryIO) -> None:
        import pyarrow.parquet as pq

        self.schema = verl_schema()
        self.writer = pq.ParquetWriter(handle, self.schema)
        self.batch: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self.batch.append(row)
        if len(self.batch) >= PARQUET_BATCH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self.batch:
            self.writer.write_table(pa.Table.from_pylist(self.batch, schema=self.schema))
            self.batch = []

    def close(self) -> None:
        self._flush()
        self.writer.close()


def sink_for(fmt: str, handle: BinaryIO) -> JsonlSink | ParquetSink:
    return ParquetSink(handle) if fmt == "verl-sft" else JsonlSink(handle)


def read_rows(path: Path, fmt: str) -> list[Any]:
    """The rows of a trainer file: parquet for verl-sft, else JSONL (a bad line is kept as its error text)."""
    if fmt == "verl-sft":
        require_pyarrow()
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
            raise UserError(f"{path}: not a parquet file pyarrow can read ({exc})") from None
    rows: list[Any] = []
    with open(path, "rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                rows.append(ValueError(f"not valid JSON ({exc})"))
    return rows
