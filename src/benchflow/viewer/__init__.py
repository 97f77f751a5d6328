"""``bench view``: a local web viewer of jobs, trials and trajectories over ``benchflow.results``.

``sources`` resolves what was opened, ``app`` holds the Starlette routes and
JSON endpoints, ``server`` binds the port and runs uvicorn; ``static/`` is the
page (plain JS, no build step, nothing fetched from the internet; charts with
the vendored uPlot in ``static/vendor``). ``outcomes`` (with ``pareto`` and
``training``) builds the ``benchflow.outcomes/1`` document the Pareto, Outcomes
and Training tabs draw; ``cache`` keeps each job read once until it changes;
``export`` writes ``bench view --export`` files.
"""
