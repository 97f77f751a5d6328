"""The simulated user of a task (``user:`` and ``## user-persona``): it answers the agent's last message
as the next prompt of the same session (:mod:`.user`). A run feature (:mod:`.feature`, ``jobs.extensions``);
a scene's turns (``benchflow.scenes``) converse with it too.
"""
