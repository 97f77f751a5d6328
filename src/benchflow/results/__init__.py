"""Reading finished jobs: documents, metrics, comparisons, the explain catalogue and bundles.

Reads files only (``benchflow.jobs.layout`` for every path); never imports the
scheduler. ``load_job`` / ``load_trial`` / ``compare`` return the typed
documents ``bench … --json`` prints.
"""

from .compare import compare
from .documents import Comparison, JobDocument, TrialDocument, TrialSummary
from .job import load_job
from .trajectory import iter_trajectory
from .trial import load_trial

__all__ = ["Comparison", "JobDocument", "TrialDocument", "TrialSummary", "compare", "iter_trajectory",
           "load_job", "load_trial"]
