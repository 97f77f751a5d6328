"""``bench traj``: share a trajectory, redacted, with a BenchFlow Hub.

The pipeline of ``bench traj upload``: :mod:`.sources` (which JSONL files
PATH means), :mod:`.identity` (who contributes it, from flags or git),
:mod:`.stage` (redact with the project's redactor, preview, zip a capture
with its manifest and an optional workspace zip), :mod:`.hub_upload` (send it
to the hub, wait until the hub verified it, ``traj status``).
"""
