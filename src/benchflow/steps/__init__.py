"""Multi-step tasks (a task's ``steps``): each step's prompt, then its own verifier, in one sandbox.

A run feature (:mod:`.feature`, ``jobs.extensions``): :mod:`.runner` runs the steps, :mod:`.dirs` knows
where a step keeps its folders (asked while planning, before any sandbox starts).
"""
