"""``bench daemon``: an opt-in, private, per-user warm runtime for ``bench run``.

``server.py`` keeps the engine imported and its connection open and serves
runs over a Unix socket only its user can reach; ``client.py`` is what
``bench daemon start|status|stop`` and ``bench run`` under ``BENCHFLOW_DAEMON=auto``
use; ``paths.py`` says where the socket and the state file live.
"""
