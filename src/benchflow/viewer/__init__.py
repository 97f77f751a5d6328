"""``bench view``: a local web viewer of jobs, trials and trajectories over ``benchflow.results``.

``sources`` resolves what was opened, ``app`` holds the Starlette routes and
JSON endpoints, ``server`` binds the port and runs uvicorn; ``static/`` is the
page (plain JS, no build step, nothing fetched from the internet).
"""
