"""Running a task's verifier in the sandbox and reading its reward files."""

from .rewards import RewardError, parse_reward_files
from .runner import VerifierOutcome, run_verifier

__all__ = ["RewardError", "VerifierOutcome", "parse_reward_files", "run_verifier"]
