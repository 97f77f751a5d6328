"""The collector store: the SQLite file a rating tool writes and BenchFlow reads.

``schema.py`` holds the tables as migrations, ``records.py`` the row types and
``store.py`` opening (read-write with migrations, or read-only by a ``mode=ro``
URI), inserts and queries. The format is documented for third-party
collectors in docs/collector-store.md.
"""
