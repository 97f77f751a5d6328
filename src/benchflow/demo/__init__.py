"""The bundled hello-world task (``bench eval smoke``; ``examples/tasks/hello-world`` links here)."""

from pathlib import Path

HELLO_WORLD = Path(__file__).resolve().parent / "hello-world"
