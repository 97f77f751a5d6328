"""Run specs, plans, the job folder and the scheduler that fills it."""
