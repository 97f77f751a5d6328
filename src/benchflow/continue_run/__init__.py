"""``bench eval continue`` / ``continue-batch``: resume timed-out (OpenHands) trials by record-replay.

:mod:`.source` reads the original trial folder, :mod:`.plan` decides what the continuation runs,
:mod:`.run` runs it through the one trial runner in a :class:`.mode.ContinueMode` (the replay
itself is a mode of the model gateway: :mod:`benchflow.gateway.replay`), :mod:`.discover` finds
the timed-out trials under a folder. Format and semantics: docs/continue-runs.md.
"""
