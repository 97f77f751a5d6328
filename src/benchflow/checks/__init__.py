"""Task check levels that run the task (equivalence, acceptance-live): they drive the run engine.

They sit below ``jobs`` (they call ``benchflow.jobs.public.run``), apart from
``tasks`` (which never imports the engine) and ``verify`` (which the engine uses).
"""
