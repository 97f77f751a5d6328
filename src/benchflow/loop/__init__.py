"""Harness loop strategies (``--loop-strategy``): re-prompting the agent until a soft verification passes."""
