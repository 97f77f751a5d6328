"""``bench assess``: blind pairwise human assessments kept in an opt-in sidecar.

An assessment compares two saved attempts of one task. Everything about it is
an append-only, hash-chained log of events in ``<sidecar>/events.jsonl``; the
label (1, 0, 0.5 or withheld) is a pure function of that log
(:mod:`benchflow.assess.reducer`). Rewards, ``result.json``, ``regrade.json``
and rollout streams are never read for the label nor changed.

Modules, each one job:

- ``digest``    canonical JSON, file and folder hashes, write-a-new-file-only
- ``attempt``   saved-attempt references (``attempt-ref``) and re-hashing them
- ``log``       the sidecar's files, its lock, reading and appending events
- ``reducer``   the pure fold of the log into a state and the label document
- ``events``    one function per write command (create, release, assign, ...)
- ``collector`` the collector's store, read-only (assignment and vote)
- ``verify``    the chain, the label file, the evidence, an expected event
"""

from __future__ import annotations

from benchflow.errors import UserError


class AssessmentError(UserError):
    """A refused assessment write or bad input: one line naming what and how to fix it."""

    category = "assessment_error"
