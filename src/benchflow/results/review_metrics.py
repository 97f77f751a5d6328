"""Rubric-review and integrity figures of a set of trials, for ``bench eval metrics``.

Beside the verifier's solve rate, never folded into it: how many trials were
reviewed, the distribution of the current revision's rubric reward (mean with a
95% interval, and the count in each decision band of the contracts: < 0.65 not
publishable, < 0.80 presentable with revisions, else publishable), reviewer
errors, and the integrity verdicts with their flag codes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from .documents import TrialSummary
from .metrics import interval_over_tasks

BANDS = (("0.00-0.65", 0.0, 0.65), ("0.65-0.80", 0.65, 0.80), ("0.80-1.00", 0.80, 1.0000001))


def review_figures(trials: Iterable[TrialSummary]) -> dict[str, Any] | None:
    """``{reviewed, completed, reviewer_errors, mean_rubric_reward, interval, bands, decisions}`` or None."""
    reviews = [t.review for t in trials if t.review]
    if not reviews:
        return None
    done = [r for r in reviews if r.get("status") == "completed"]
    rewards = [float(r["rubric_reward"]) for r in done if isinstance(r.get("rubric_reward"), (int, float))]
    return {"reviewed": len(reviews), "completed": len(done), "reviewer_errors": len(reviews) - len(done),
            "mean_rubric_reward": sum(rewards) / len(rewards) if rewards else None,
            "interval": interval_over_tasks(rewards) if len(rewards) > 1 else None,
            "bands": {name: sum(low <= r < high for r in rewards) for name, low, high in BANDS},
            "decisions": dict(sorted(Counter(str(r.get("decision")) for r in done).items()))}


def integrity_figures(trials: Iterable[TrialSummary]) -> dict[str, Any] | None:
    """``{audited, clean, flagged, flag_codes: {code: trials}}`` or None when no trial was audited."""
    verdicts = [t.integrity for t in trials if t.integrity]
    if not verdicts:
        return None
    flagged = [v for v in verdicts if v["verdict"] == "flagged"]
    codes = Counter(code for v in flagged for code in set(v.get("flag_codes") or []))
    return {"audited": len(verdicts), "clean": len(verdicts) - len(flagged), "flagged": len(flagged),
            "flag_codes": dict(sorted(codes.items()))}


def review_lines(review: dict[str, Any] | None, integrity: dict[str, Any] | None) -> list[str]:
    """The text lines of ``bench eval metrics`` for the two blocks (none when neither ran)."""
    lines = []
    if review:
        mean = review["mean_rubric_reward"]
        interval = review["interval"]
        ci = f" (95% CI {interval['low']:.2f}-{interval['high']:.2f})" if interval else ""
        bands = ", ".join(f"{name}: {n}" for name, n in review["bands"].items())
        lines.append(f"Rubric review: {review['completed']}/{review['reviewed']} reviewed"
                     + (f", mean rubric reward {mean:.2f}{ci}" if mean is not None else "")
                     + (f", reviewer errors {review['reviewer_errors']}" if review["reviewer_errors"] else ""))
        lines.append(f"  rubric reward bands: {bands}")
        if review["decisions"]:
            lines.append("  decisions: " + ", ".join(f"{k} {v}" for k, v in review["decisions"].items()))
    if integrity:
        codes = ", ".join(f"{k} {v}" for k, v in integrity["flag_codes"].items())
        lines.append(f"Integrity: {integrity['audited']} audited, {integrity['clean']} clean, "
                     f"{integrity['flagged']} flagged" + (f" ({codes})" if codes else ""))
    return lines
