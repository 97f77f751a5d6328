"""Monitor mode: score a rollout in production (#386).

BenchFlow has one scored rollout and three modes: eval (score it and stop), train (score it and hand
the trajectory to a trainer) and monitor (score it in production). In production there is no sandbox
to inspect and no hidden test, so a monitor scores what the rollout's record shows: a judge model reads
its trajectory against a rubric (:mod:`.judge`), and an alert is kept apart from the reward.

- :mod:`.transcript`, :mod:`.render`  any trajectory BenchFlow reads, as turns, as the judge's text
- :mod:`.rubric`                      which rubric, judge model and task
- :mod:`.judge`                       the judge call, scores, reward, alert
- :mod:`.verdict`                     the run folder and ``verdict.json``
- :mod:`.score`                       ``bench monitor run`` / ``replay`` (:mod:`.replay` reads a trial)
- :mod:`.events`, :mod:`.watch`       ``bench monitor watch``: the event stream, followed
"""
