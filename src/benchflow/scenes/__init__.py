"""Multi-role scenes: a task's ``scenes`` (or a run config's) run turn by turn in one sandbox, each turn a
session of its role's agent.

A run feature (:mod:`.feature`, ``jobs.extensions``): :mod:`.plan` is what a scene task asks before its
sandbox starts (run-card issues, role agents, the ``config.json`` record, the run's scenes laid over a
task's), :mod:`.run_config` reads a run config's ``scenes:``, :mod:`.runner` runs the turns.
"""
