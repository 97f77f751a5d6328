"""Worker shards (``--worker-concurrency``): the job's tasks split over worker subprocesses (:mod:`.run`),
each a ``python -m benchflow.shards.worker`` with a scheduler of its own. A run feature (:mod:`.feature`,
``jobs.extensions``).
"""
