"""Training data from job folders: ``bench train convert | token-coverage | stream | validate | run sft``.

Rollouts are read through the typed records (``benchflow.records``) and the
job-folder paths of ``benchflow.jobs.layout``; nothing here writes into a job
folder. Modules, one job each:

``source``     find the rollouts (trial folders) under a path, read their exchanges
``chat``       one recorded exchange (Chat Completions, Messages, Responses) as OpenAI chat messages
``rules``      the row rules of contracts §8.3 (roles, banned keys, tool-call ids, the training window)
``advantage``  GRPO / leave-one-out group advantages (contracts §4.8)
``redaction``  the shared redactor behind a cheap pre-check (rows of 10,000 rollouts in time)
``selection``  name lists given as files (--canonical-selection, --task-manifest)
``branch``     --format branch-tree: a row per branch child (prefix, continuation, advantage), --pairs
``formats``    one row builder per trainer format
``output``     JSONL and parquet writers (atomic, streamed)
``convert``    ``bench train convert``: the loop, the stats, ``--expected-rows``
``validate``   ``bench train validate``: a report naming each bad row
``tokens``     token-capture blocks: coverage (``token-coverage``) and per-call records
``stream``     ``bench train stream``: finished rollouts of a running job as JSON lines
``window``     tokenizer-aware message windows (``--context-policy message-window``)
``sft_run``    ``bench train run sft``: a Prime-RL SFT run and its ``train-run.json``
"""
