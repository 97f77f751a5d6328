"""``bench preferences pairs``: make the store, copy the outputs under opaque ids, write the blind pairs.

Everything is checked before anything is written; the store, the bundle
folder and the pairs file must all be new. The pairs file (JSON lines) names
outputs only by opaque id and bundle path: nothing in it says which agent,
model or condition made an output.
"""

from __future__ import annotations

import json
import random
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.collector import store as collector
from benchflow.collector.records import Output, Pair, new_id, now
from benchflow.errors import ConfigError, UserError
from benchflow.util.atomic import write_bytes, write_text

from . import rubric as rubrics
from .outputs import (
    Found,
    copy_output,
    item_outputs,
    relative_inside,
    tree_digest,
    trial_outputs,
)
from .pairing import plan_pairs

OUTPUT_CHOICES = ("artifacts", "evidence/workspace")
GOLDEN_CHOICES = ("side", "bar")


@dataclass
class PairsOptions:
    store: Path
    out: Path
    output: str = "artifacts"
    per_task: int | None = None
    seed: int | None = None
    rubric: Path | None = None
    bundle: Path | None = None
    keep_sides: bool = False
    items: Path | None = None
    condition: str | None = None
    entry: str | None = None
    golden: str = "side"


@dataclass
class PairsReport:
    store: Path
    out: Path
    bundle: Path
    seed: int
    outputs: int
    pairs: int
    tasks: int
    notes: list[str] = field(default_factory=list)


def _fresh(path: Path, flag: str) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UserError(f"{flag} {path}: already exists; give a new path")


def _check(opts: PairsOptions) -> Path:
    if opts.output not in OUTPUT_CHOICES:
        relative_inside(opts.output, "--output")
    if opts.golden not in GOLDEN_CHOICES:
        raise ConfigError(f"--golden {opts.golden}: use side or bar")
    if opts.per_task is not None and opts.per_task < 1:
        raise ConfigError(f"--per-task {opts.per_task}: give 1 or more")
    if opts.entry is not None:
        opts.entry = relative_inside(opts.entry, "--entry")
    bundle = opts.bundle or opts.store.parent / f"{opts.store.name}-outputs"
    _fresh(opts.store, "--store")
    _fresh(bundle, "--bundle")
    if opts.out.exists():
        raise UserError(f"--out {opts.out}: already exists; give a new file")
    return bundle


def _pair_row(pair: Pair, ids: dict[str, Output], bundle: Path, golden: list[Output]) -> dict[str, Any]:
    def side(output_id: str) -> dict[str, Any]:
        o = ids[output_id]
        return {"output_id": o.output_id, "path": str(bundle / (o.bundle_path or o.output_id)), "entry": o.entry}

    row: dict[str, Any] = {"pair_id": pair.pair_id, "position": pair.position, "task_id": pair.task_id,
                           "left": side(pair.left_output), "right": side(pair.right_output)}
    bars = [side(g.output_id) for g in golden if (g.task_id, g.task_version) == (pair.task_id, pair.task_version)]
    if bars:
        row["golden"] = bars[0]
    return row


def make_pairs(jobs: list[Path], opts: PairsOptions) -> PairsReport:
    """Check, then write the store, the outputs bundle and the pairs file.

    Raises:
        UserError / ConfigError / JobFolderError: bad input, or nothing to pair (exit 2).
    """
    bundle = _check(opts)
    if not jobs and opts.items is None:
        raise UserError("give job or trial folders to pair, or --items")
    rubric = frozen = None
    if opts.rubric is not None:
        rubric, frozen = rubrics.load_rubric(opts.rubric)
    notes: list[str] = []
    found: list[Found] = trial_outputs(jobs, opts.output, opts.condition, opts.entry, notes)
    if opts.items is not None:
        found += item_outputs(opts.items, found, opts.entry, notes)
    seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31)
    planned = plan_pairs(found, random.Random(seed), per_task=opts.per_task, keep_sides=opts.keep_sides,
                         golden=opts.golden)
    if not planned:
        raise UserError(f"no two outputs of one task version from different agents or models among "
                        f"{len(found)} output(s); nothing to pair" + (f" ({notes[0]})" if notes else ""))

    try:
        return _write(opts, bundle, found, planned, seed, rubric, frozen, notes, jobs)
    except BaseException:
        # everything written so far is new (checked above): leave nothing half made behind
        for made in (bundle, opts.store):
            shutil.rmtree(made, ignore_errors=True)
        opts.out.unlink(missing_ok=True)
        raise


def _write(opts: PairsOptions, bundle: Path, found: list[Found], planned: list, seed: int,
           rubric: dict[str, Any] | None, frozen: bytes | None, notes: list[str], jobs: list[Path]) -> PairsReport:
    used = sorted({i for p in planned for i in (p.left, p.right)}
                  | {i for i, f in enumerate(found) if f.kind == "golden" and opts.golden == "bar"})
    outputs: dict[int, Output] = {}
    for i in used:
        f = found[i]
        oid = new_id("o")
        copy_output(f.source, bundle / oid)
        outputs[i] = Output(output_id=oid, task_id=f.task_id, task_version=f.task_version, source_path=str(f.source),
                            agent=f.agent, model=f.model, condition=f.condition, kind=f.kind,
                            trial_path=str(f.trial_path) if f.trial_path else None, bundle_path=oid,
                            entry=f.entry if f.source.is_dir() else (f.entry or f.source.name),
                            digest=tree_digest(f.source))
    pairs = [Pair(pair_id=new_id("p"), position=n, task_id=found[p.left].task_id,
                  task_version=found[p.left].task_version, left_output=outputs[p.left].output_id,
                  right_output=outputs[p.right].output_id, swapped=p.swapped) for n, p in enumerate(planned)]

    from benchflow import __version__

    conn = collector.create_store(opts.store)
    try:
        conn.execute("BEGIN IMMEDIATE")
        meta = {"seed": str(seed), "output": opts.output, "bundle": str(bundle.resolve()), "golden": opts.golden,
                "created_at": now(), "benchflow_version": __version__,
                "jobs": "\n".join(str(j.resolve()) for j in jobs)}
        if opts.entry:
            meta["entry"] = opts.entry
        if frozen is not None and rubric is not None:
            meta.update(rubric=json.dumps(rubric), rubric_sha256=rubrics.sha256(frozen))
        collector.set_meta(conn, meta)
        for o in outputs.values():
            collector.add_output(conn, o)
        for p in pairs:
            collector.add_pair(conn, p)
        conn.execute("COMMIT")
    finally:
        conn.close()
    if frozen is not None:
        write_bytes(opts.store / "rubric.json", frozen)
    by_id = {o.output_id: o for o in outputs.values()}
    golden = [o for o in outputs.values() if o.kind == "golden"] if opts.golden == "bar" else []
    rows = [_pair_row(p, by_id, bundle.resolve(), golden) for p in pairs]
    write_text(opts.out, "".join(json.dumps(r) + "\n" for r in rows))
    return PairsReport(store=opts.store, out=opts.out, bundle=bundle, seed=seed, outputs=len(outputs),
                       pairs=len(pairs), tasks=len({p.task_id for p in pairs}), notes=notes)
