"""BenchFlow: run AI agents against benchmark tasks in sandboxes and score them."""

__version__ = "0.10.0"
