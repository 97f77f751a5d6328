"""Embodied rollouts (robots and simulators): what ``bench embodied`` reads, checks and ships.

An embodied task runs a trusted episode server (the simulator) beside the agent; its verifier copies the
server's episode record into the trial's ``verifier/episode/`` and the video and camera images into
``artifacts/`` (the layout is :class:`benchflow.jobs.layout.EpisodePaths`; formats: docs/embodied.md)::

  record.py   one trial's episode record read back: result, header, per-step lines, state hashes, seeds
  report.py   seeded rollouts per task: rewards by seed, mean, std, pass@k, reset reproducibility
  export.py   every trial's per-step transitions and the episode index (steps.jsonl, episodes.jsonl)
  verify.py   each trial's files against its verdict now: record hashes, video copies, reward vs the record
  spec.py     the embodiment spec (what a robot senses, how it is commanded, its skills) checked
  robo.py     the agent-side ``robo`` command (standard library only; copied into agent images, never imported)
"""
