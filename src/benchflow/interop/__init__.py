"""Other tools' formats, written from a job folder: ATIF trajectories (Harbor) and Inspect eval logs.

:func:`benchflow.interop.export.export` is the one entry point (``bench traj export``); it reads through
:mod:`benchflow.records` and :mod:`benchflow.results` only, and never writes inside the folder it reads.
"""
