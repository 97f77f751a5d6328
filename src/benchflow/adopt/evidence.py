"""parity_experiment.json read as the two kinds of evidence the parity gate scores.

*Criteria*: a verdict of the original harness and one of the converted benchmark on the same input,
which must agree. *Rewards*: a score of the original harness and ours for the same thing (a task, or a
metric over runs), whose difference the gate holds to ``--tolerance``.

Shapes read (any mix; unknown keys are ignored):

- BenchFlow's (what ``parity_test.py --mode side-by-side`` prints and the scaffold starts from):
  ``conversion_parity.tasks[]`` or a top-level ``tasks[]``, each with ``criteria_results[]`` of
  ``original_verdict`` / ``adapted_verdict`` (``agreement`` when given, else their equality);
  ``reward_distribution_parity.samples[]`` and ``agent_parity.results[]`` with
  ``legacy_reward``/``pb_reward``/``programbench.reward`` and
  ``converted_reward``/``bf_reward``/``benchflow.reward`` (an explicit ``reward_delta`` wins); and the
  pass/total summary blocks ``structural_parity``, ``eval_parity``, ``live_parity``, ``e2e_parity``,
  ``pipeline_parity``, ``security_parity`` (or a bare ``results``), each one criterion that agrees
  when every tested task passed.
- Harbor's adapters' (a top-level array of experiments): each ``metrics[]`` entry's ``original_runs``
  and ``harbor_runs`` (older files: ``*_trials``) are one reward pair, the means of the runs; without
  runs, the means of the ``original`` / ``harbor`` strings (``"72.0 +/- 1.5"``). Harbor reports
  accuracies as percentages: a metric whose values exceed 1 (or are written with ``%``) is read in
  percent and divided by 100; one with a value below 0 or above 100 is no reward and is refused. A
  metric with ``converted`` instead of ``harbor`` is compared as exact values (a criterion), as
  BenchFlow's in-repo benchmarks record them.

Malformed evidence (a reward that is not a number, a pair recorded on one side only, a list that is
not a list) is refused with the JSON path and the fix (:class:`~benchflow.errors.UserError`): it can
never pass the gate by being skipped.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import UserError

RECORD_NAME = "parity_experiment.json"
SUMMARY_BLOCKS = ("structural_parity", "eval_parity", "live_parity", "e2e_parity", "pipeline_parity",
                  "security_parity")
_MEAN = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(%?)")


@dataclass(frozen=True)
class Criterion:
    """One verdict pair: the original harness's and ours on the same input."""

    where: str
    original: str
    converted: str
    agree: bool


@dataclass(frozen=True)
class RewardPair:
    """The original harness's reward and ours for the same task (or metric), in reward units (0-1)."""

    where: str
    original: float | None
    converted: float | None
    delta: float
    """``|converted - original|``, or the file's explicit ``reward_delta``."""


@dataclass
class Evidence:
    """What a parity document holds, and where it came from (a file, or a rerun's output)."""

    source: str
    criteria: list[Criterion] = field(default_factory=list)
    rewards: list[RewardPair] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.criteria and not self.rewards


class _Reader:
    """Walks one document; every refusal names ``source`` and the JSON path."""

    def __init__(self, source: str) -> None:
        self.evidence = Evidence(source=source)

    def refuse(self, where: str, problem: str, fix: str) -> UserError:
        return UserError(f"{self.evidence.source}: {where}: {problem}; {fix}")

    def as_list(self, value: Any, where: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.refuse(where, f"is a {type(value).__name__}, not a list", "make it a JSON array")
        return value

    def as_object(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.refuse(where, f"is a {type(value).__name__}, not an object", "make it a JSON object")
        return value

    def number(self, value: Any, where: str) -> float | None:
        """A finite number as float; None stays None (a missing value)."""
        return None if value is None else self.score(value, where)

    def score(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.refuse(where, f"{value!r} is not a number", "record the reward as a number such as 0.5")
        return float(value)

    # -- BenchFlow's shape ------------------------------------------------------------------------

    def mapping(self, data: dict[str, Any]) -> None:
        conversion = data.get("conversion_parity")
        tasks = []
        if conversion is not None:
            conversion = self.as_object(conversion, "conversion_parity")
            tasks += [(f"conversion_parity.tasks[{i}]", t)
                      for i, t in enumerate(self.as_list(conversion.get("tasks"), "conversion_parity.tasks"))]
        # A bare top-level "tasks" may mean something else in a file (a list of names): only its entries
        # that carry criteria_results are parity evidence.
        top = data.get("tasks") if isinstance(data.get("tasks"), list) else []
        tasks += [(f"tasks[{i}]", t) for i, t in enumerate(top) if isinstance(t, dict) and "criteria_results" in t]
        for where, task in tasks:
            self.criteria_of(self.as_object(task, where), where)
        for block, key in (("reward_distribution_parity", "samples"), ("agent_parity", "results")):
            if data.get(block) is None:
                continue
            body = self.as_object(data[block], block)
            for i, sample in enumerate(self.as_list(body.get(key), f"{block}.{key}")):
                where = f"{block}.{key}[{i}]"
                self.sample(self.as_object(sample, where), where)
        if not self.evidence.criteria:
            self.summaries(data)

    def criteria_of(self, task: dict[str, Any], where: str) -> None:
        task_id = str(task.get("task_id", ""))
        for i, crit in enumerate(self.as_list(task.get("criteria_results"), f"{where}.criteria_results")):
            here = f"{where}.criteria_results[{i}]"
            crit = self.as_object(crit, here)
            original, converted = crit.get("original_verdict"), crit.get("adapted_verdict")
            agreement = crit.get("agreement")
            if agreement is not None and not isinstance(agreement, bool):
                raise self.refuse(f"{here}.agreement", f"{agreement!r} is not true or false",
                                  "write true or false, or leave it out to compare the verdicts")
            if agreement is None and (original is None or converted is None):
                raise self.refuse(here, "has no original_verdict/adapted_verdict pair",
                                  "record both verdicts of the criterion")
            name = str(crit.get("criterion_id", i))
            self.evidence.criteria.append(Criterion(
                where=f"{task_id}/{name}" if task_id else name, original=str(original), converted=str(converted),
                agree=agreement if agreement is not None else original == converted))

    def sample(self, sample: dict[str, Any], where: str) -> None:
        original = self.side(sample, where, ("legacy_reward", "pb_reward"), "programbench")
        converted = self.side(sample, where, ("converted_reward", "bf_reward"), "benchflow")
        explicit = self.number(sample.get("reward_delta"), f"{where}.reward_delta")
        if explicit is not None:
            delta = abs(explicit)
        elif original is not None and converted is not None:
            delta = abs(converted - original)
        elif original is None and converted is None:
            raise self.refuse(where, "has no rewards", "record legacy_reward and converted_reward, or drop it")
        else:
            missing = "converted_reward" if converted is None else "legacy_reward"
            raise self.refuse(where, f"has no {missing}",
                              "record the reward of both harnesses (a one-sided sample proves nothing)")
        self.evidence.rewards.append(RewardPair(str(sample.get("task_id", where)), original, converted, delta))

    def side(self, sample: dict[str, Any], where: str, keys: tuple[str, ...], nested: str) -> float | None:
        for key in keys:
            if sample.get(key) is not None:
                return self.number(sample[key], f"{where}.{key}")
        block = sample.get(nested)
        if isinstance(block, dict) and block.get("reward") is not None:
            return self.number(block["reward"], f"{where}.{nested}.reward")
        return None

    def summaries(self, data: dict[str, Any]) -> None:
        blocks = [(key, data[key]) for key in SUMMARY_BLOCKS if isinstance(data.get(key), dict)]
        if not blocks and isinstance(data.get("results"), dict):
            blocks = [("results", {"results": data["results"]})]
        for key, block in blocks:
            counts = _pass_total(block)
            if counts is not None and counts[1] > 0:
                passed, total = counts
                self.evidence.criteria.append(Criterion(key, f"{total} tasks", f"{passed} passed", passed == total))

    # -- Harbor's shape -----------------------------------------------------------------------------

    def records(self, records: list[Any]) -> None:
        for i, record in enumerate(records):
            record = self.as_object(record, f"[{i}]")
            for j, metric in enumerate(self.as_list(record.get("metrics"), f"[{i}].metrics")):
                where = f"[{i}].metrics[{j}]"
                self.metric(self.as_object(metric, where), where)

    def metric(self, metric: dict[str, Any], where: str) -> None:
        name = " / ".join(str(metric[k]) for k in ("benchmark_name", "metric", "name") if metric.get(k)) or where
        if "converted" in metric and "harbor" not in metric:
            original, converted = _exact(metric.get("original")), _exact(metric.get("converted"))
            if original is not None and converted is not None:
                self.evidence.criteria.append(Criterion(name, original, converted, original == converted))
            return
        runs = {side: self.runs(metric, side, where) for side in ("original", "harbor")}
        if not runs["original"] and not runs["harbor"]:
            runs = {side: self.stated_mean(metric, side, where) for side in ("original", "harbor")}
        if not runs["original"] or not runs["harbor"]:
            missing = "original" if not runs["original"] else "harbor"
            raise self.refuse(where, f"has no {missing} score",
                              f"record {missing}_runs (one score per run) for both harnesses")
        percent = any("%" in str(metric.get(side, "")) for side in ("original", "harbor"))
        values = runs["original"] + runs["harbor"]
        if any(v < 0 or v > 100 for v in values):
            raise self.refuse(where, f"metric {name!r} has a value outside 0-100, not a reward",
                              "record rewards (0-1) or percentages (0-100)")
        scale = 100.0 if percent or any(v > 1 for v in values) else 1.0
        original = sum(runs["original"]) / len(runs["original"]) / scale
        converted = sum(runs["harbor"]) / len(runs["harbor"]) / scale
        self.evidence.rewards.append(RewardPair(name, original, converted, abs(converted - original)))

    def runs(self, metric: dict[str, Any], side: str, where: str) -> list[float]:
        for key in (f"{side}_runs", f"{side}_trials"):
            if metric.get(key) is not None:
                values = self.as_list(metric[key], f"{where}.{key}")
                return [self.score(v, f"{where}.{key}[{i}]") for i, v in enumerate(values)]
        return []

    def stated_mean(self, metric: dict[str, Any], side: str, where: str) -> list[float]:
        text = metric.get(side)
        if text is None:
            return []
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            return [self.score(text, f"{where}.{side}")]
        match = _MEAN.match(str(text))
        if not match:
            raise self.refuse(f"{where}.{side}", f"{text!r} is not 'mean +/- sem'",
                              f"write it as '72.0 +/- 1.5', or record {side}_runs")
        return [float(match.group(1))]


def _pass_total(block: dict[str, Any]) -> tuple[int, int] | None:
    """(passed, total) of a summary block: ``passed`` with ``tasks_tested``, ``total_tasks`` or ``failed``,
    directly or in ``results_summary`` / ``results``; None when it has no integer counts."""
    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    for part in (block, block.get("results_summary"), block.get("results")):
        if not isinstance(part, dict) or count(part.get("passed")) is None:
            continue
        passed = count(part["passed"])
        total = count(part.get("tasks_tested"))
        total = total if total is not None else count(part.get("total_tasks"))
        failed = count(part.get("failed"))
        if total is None and failed is not None:
            total = passed + failed  # type: ignore[operator]
        if total is not None:
            return passed, total  # type: ignore[return-value]
    return None


def _exact(value: Any) -> str | None:
    """An exactly comparable value; None for a missing one or a noisy ``mean ± std`` string."""
    if value is None or isinstance(value, (list, dict)):
        return None
    text = str(value).strip()
    return None if "±" in text or "+/-" in text else text


def read_evidence(data: Any, source: str) -> Evidence:
    """The evidence of a parsed parity document; ``source`` names it in refusals.

    Raises:
        UserError: the document is malformed (path and fix in the message).
    """
    reader = _Reader(source)
    if isinstance(data, list):
        reader.records(data)
    elif isinstance(data, dict):
        reader.mapping(data)
    else:
        raise UserError(f"{source}: is a JSON {type(data).__name__}; a parity document is an object "
                        "(BenchFlow's) or an array of experiments (Harbor's)")
    return reader.evidence


def parse_json(text: str, source: str) -> Any:
    """``text`` as JSON, or a one-line refusal naming ``source`` and where it stops parsing."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                        "fix the file, or record it again with parity_test.py --mode side-by-side --record") from None


def load_recorded(bench_dir: Path) -> Evidence | None:
    """The evidence of ``<bench_dir>/parity_experiment.json``; None when the file does not exist.

    Raises:
        UserError: the file is not readable UTF-8 JSON or is malformed.
    """
    path = bench_dir / RECORD_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot be read ({exc}); fix its permissions or encoding (UTF-8)") from None
    return read_evidence(parse_json(text, str(path)), str(path))
