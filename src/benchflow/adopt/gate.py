"""The parity gate: does the converted benchmark score as the original harness does?

The evidence (:mod:`.evidence`: the recorded parity_experiment.json, or a rerun's output) decides:

``parity-confirmed``       every criterion pair agrees and every reward pair is within ``--tolerance``
``parity-divergent``       some pair is not
``insufficient-evidence``  nothing measured yet (no file, or the scaffold's empty template)

The gate passes (exit 0) only on ``parity-confirmed``, and, with ``--roundtrip-task``, a lossless round
trip of that task. The verdict, with every pair that failed, is written atomically to
``<benchmark>/parity_verdict.json``; a divergence also gets an issue draft (markdown) for a human to
file. Parity only: a faithful conversion reproduces the original's behaviour, its quirks included.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchflow.errors import UserError
from benchflow.util import atomic

from .evidence import RECORD_NAME, Evidence, load_recorded

VERDICT_NAME = "parity_verdict.json"
DEFAULT_TOLERANCE = 0.02
SCHEMA_VERSION = 1

Verdict = Literal["parity-confirmed", "parity-divergent", "insufficient-evidence"]

_SAYS = {
    "parity-confirmed": "the converted benchmark reproduces the original harness: every criterion agrees and "
                        "every reward is within the tolerance",
    "parity-divergent": "the converted benchmark does not reproduce the original harness yet; fix the "
                        "conversion and run the gate again",
    "insufficient-evidence": "no parity evidence is recorded; run parity_test.py --mode side-by-side --record "
                             "(or pass --rerun), then the gate again",
}


def check_tolerance(tolerance: float) -> float:
    """Raises UserError unless ``tolerance`` is a finite number >= 0."""
    if not math.isfinite(tolerance) or tolerance < 0:
        raise UserError(f"--tolerance {tolerance}: must be a reward difference of 0 or more, e.g. 0.02")
    return tolerance


def within(delta: float, tolerance: float) -> bool:
    """``delta <= tolerance``, blind to float noise (0.52 - 0.5 is within 0.02)."""
    return round(delta, 9) <= tolerance


def decide(evidence: Evidence | None, tolerance: float) -> Verdict:
    if evidence is None or evidence.empty:
        return "insufficient-evidence"
    agree = all(c.agree for c in evidence.criteria)
    close = all(within(r.delta, tolerance) for r in evidence.rewards)
    return "parity-confirmed" if agree and close else "parity-divergent"


@dataclass
class GateResult:
    """One run of the gate: its evidence, its verdict and where it was written."""

    benchmark: str
    bench_dir: Path
    evidence: Evidence | None
    evidence_kind: Literal["recorded", "rerun"]
    tolerance: float
    verdict: Verdict
    roundtrip: Any = None
    """A ``benchflow.tasks.roundtrip.RoundTripReport`` with ``--roundtrip-task``."""

    @property
    def passed(self) -> bool:
        roundtrip_ok = self.roundtrip is None or self.roundtrip.status == "lossless"
        return self.verdict == "parity-confirmed" and roundtrip_ok

    @property
    def says(self) -> str:
        if self.verdict == "parity-confirmed" and not self.passed:
            return ("the scores agree, but the converted task changes on the structural round trip; fix its "
                    "conversion and run the gate again")
        return _SAYS[self.verdict]

    @property
    def disagreements(self) -> list[Any]:
        return [c for c in self.evidence.criteria if not c.agree] if self.evidence else []

    @property
    def exceeding(self) -> list[Any]:
        return [r for r in self.evidence.rewards if not within(r.delta, self.tolerance)] if self.evidence else []

    @property
    def max_abs_delta(self) -> float | None:
        rewards = self.evidence.rewards if self.evidence else []
        return max((r.delta for r in rewards), default=None)

    @property
    def verdict_path(self) -> Path:
        return self.bench_dir / VERDICT_NAME

    def document(self) -> dict[str, Any]:
        """The content of parity_verdict.json."""
        from benchflow import __version__

        criteria = self.evidence.criteria if self.evidence else []
        rewards = self.evidence.rewards if self.evidence else []
        return {
            "schema_version": SCHEMA_VERSION,
            "benchmark": self.benchmark,
            "verdict": self.verdict,
            "passed": self.passed,
            "evidence": self.evidence_kind,
            "evidence_source": self.evidence.source if self.evidence else None,
            "tolerance": self.tolerance,
            "criteria": {"compared": len(criteria), "agreed": sum(c.agree for c in criteria),
                         "disagreements": [{"where": c.where, "original": c.original, "converted": c.converted}
                                           for c in self.disagreements]},
            "rewards": {"samples": len(rewards), "max_abs_delta": self.max_abs_delta,
                        "exceeding": [{"where": r.where, "original": r.original, "converted": r.converted,
                                       "delta": r.delta} for r in self.exceeding]},
            "roundtrip": self.roundtrip.to_json() if self.roundtrip is not None else None,
            "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "benchflow_version": __version__,
        }


def run_gate(bench_dir: Path, *, tolerance: float = DEFAULT_TOLERANCE, rerun: bool = False,
             roundtrip_task: Path | None = None) -> GateResult:
    """Score the benchmark at ``bench_dir`` and write its parity_verdict.json.

    Raises:
        UserError: no such benchmark, a bad tolerance or task folder, malformed evidence.
        BenchError: ``rerun`` and the benchmark's parity_test.py failed (nothing measured, nothing written).
    """
    check_tolerance(tolerance)
    if not bench_dir.is_dir():
        raise UserError(f"{bench_dir}: no such benchmark; scaffold it with bench eval adopt {bench_dir.name} "
                        "--scaffold-only (or give the --benchmarks-dir that holds it)")
    if roundtrip_task is not None and not roundtrip_task.is_dir():
        raise UserError(f"{roundtrip_task}: not a folder; give --roundtrip-task the path of one converted task")
    if rerun:
        from .rerun import rerun_side_by_side

        evidence: Evidence | None = rerun_side_by_side(bench_dir)
    else:
        evidence = load_recorded(bench_dir)
    result = GateResult(benchmark=bench_dir.name, bench_dir=bench_dir, evidence=evidence,
                        evidence_kind="rerun" if rerun else "recorded", tolerance=tolerance,
                        verdict=decide(evidence, tolerance))
    if roundtrip_task is not None:
        from benchflow.tasks.roundtrip import roundtrip_task as take_round_trip

        result.roundtrip = take_round_trip(roundtrip_task)
    atomic.write_json(result.verdict_path, result.document())
    return result


def issue_draft(result: GateResult) -> str:
    """A GitHub issue body (markdown) describing the divergence, for a human to review and file."""
    evidence = result.evidence.source if result.evidence else RECORD_NAME
    lines = [f"## The adopted benchmark `{result.benchmark}` does not pass the parity gate", "",
             f"**Verdict:** {result.verdict} (tolerance {result.tolerance:g}; evidence: {evidence})", "",
             result.says[0].upper() + result.says[1:] + ".", "", "### Criteria (original harness vs converted)"]
    criteria = result.evidence.criteria if result.evidence else []
    lines.append(f"- {sum(c.agree for c in criteria)} of {len(criteria)} agree" if criteria else "- none recorded")
    lines += [f"  - `{c.where}`: original `{c.original}`, converted `{c.converted}`" for c in result.disagreements]
    lines += ["", "### Rewards (original harness vs converted)"]
    rewards = result.evidence.rewards if result.evidence else []
    if rewards:
        lines.append(f"- {len(rewards)} pair{'s' * (len(rewards) != 1)}, largest difference "
                     f"{result.max_abs_delta:.4f}")
        lines += [f"  - `{r.where}`: original {score_text(r.original)}, converted {score_text(r.converted)}, "
                  f"difference {r.delta:.4f}" for r in result.exceeding]
    else:
        lines.append("- none recorded")
    if result.roundtrip is not None:
        lines += ["", f"### Structural round trip of `{result.roundtrip.task_dir}`: {result.roundtrip.status}"]
        lines += [f"- `{m.path}`: {m.reason}" for m in result.roundtrip.mismatches]
    rerun = " --rerun" if result.evidence_kind == "rerun" else ""
    from benchflow import __version__

    lines += ["", "### How it was checked", f"`bench eval adopt {result.benchmark} --verify{rerun}` "
              f"(BenchFlow {__version__}); the full verdict is in `{VERDICT_NAME}`.", "",
              "_This draft was not filed. Review it, fix what you can in the converter, and open it if you "
              "need help._", ""]
    return "\n".join(lines)


def score_text(value: float | None) -> str:
    """A reward as printed: four decimals, or '-' when not recorded."""
    return "-" if value is None else f"{value:.4f}"
