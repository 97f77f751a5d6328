"""Rubric review of finished rollouts (contracts §8.4) and the integrity audit.

``rubric`` (formats v0.1/v0.2), ``answer`` (the reviewer's verdict, parsed
strictly), ``scoring`` (aggregation and decision), ``evidence`` + ``wrapper``
(the throwaway task a reviewer runs), ``runner`` (``bench review``),
``revisions`` (``<trial>/scoring/<attempt>.json``), ``integrity`` (``--integrity``).
"""
