"""Scoring rules every reader and the run engine share (contracts §3.10, §4.2).

Pure functions, no imports of ours: the engine's summary.json and the results
readers count the same trial the same way.
"""

from __future__ import annotations

import math


def audit_bucket(reward: float | None, error: str | None, verifier_error: str | None) -> str:
    """Bucket a 0.7 summary.json counted: a verifier error comes first."""
    if verifier_error:
        return "verifier_errored"
    if reward is not None:
        return "passed" if reward == 1.0 else "failed"
    if error:
        return "errored"
    return "unscored"


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Probability that at least one of k trials drawn without replacement succeeds."""
    _check(n, c, k)
    if n < k:
        return None
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Probability that all k trials drawn without replacement succeed (pass^k)."""
    _check(n, c, k)
    if n < k:
        return None
    return math.comb(c, k) / math.comb(n, k)


WILSON_Z = 1.959963984540054
"""The normal quantile of a two-sided 95% interval."""


def wilson(passed: int, n: int) -> tuple[float | None, float | None]:
    """95% Wilson score interval of a pass rate (``None`` with no trials); well defined at 0% and 100%."""
    if n == 0:
        return None, None
    p = passed / n
    z2 = WILSON_Z ** 2
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = WILSON_Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if passed == 0 else max(0.0, centre - half)  # exact at the ends (rounding would leave 0.99999…)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return low, high


def _check(n: int, c: int, k: int) -> None:
    if k < 1 or n < 0 or not 0 <= c <= n:
        raise ValueError(f"need k >= 1 and 0 <= c <= n (got n={n}, c={c}, k={k})")
