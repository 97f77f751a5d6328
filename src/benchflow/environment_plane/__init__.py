"""The environment plane: a stateful environment (``--environment-manifest``, ``--state``) bound to every trial
of a run, its services provisioned in the trial's sandbox, gated on readiness and torn down."""
