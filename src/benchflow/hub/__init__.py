"""A BenchFlow Hub you can run yourself (``bench hub serve``).

Server side: :mod:`.models` (SQLAlchemy tables), :mod:`.migrations` (the
versioned upgrade path), :mod:`.blobs` (task archives, pushed runs and
trajectory captures), :mod:`.tokens` (per-user API tokens, stored hashed),
:mod:`.store` (queries), :mod:`.ingest` (what an upload must satisfy),
:mod:`.app` (JSON API) and :mod:`.pages` (HTML). Client side:
:mod:`.client` (HTTP, token from ``$BENCHFLOW_HUB_TOKEN``), :mod:`.publish`
and :mod:`.push`. Shared: :mod:`.archives` (task tar.gz and its digest) and
:mod:`.names` (``org/name@version``). See docs/hub.md.
"""
