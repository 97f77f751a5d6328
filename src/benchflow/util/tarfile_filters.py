"""``tarfile`` with extraction filters (``filter="data"`` / ``"tar"``) on every Python we support.

Extraction filters came in Python 3.11.4; Debian 12's own ``python3`` is 3.11.2, where
``extractall(..., filter=...)`` raises ``TypeError``. There the ``backports.tarfile`` package
(CPython's later ``tarfile``, filters included) stands in, so an archive is never unpacked
without the filter's rules. Open the archive with this module's ``tarfile`` too: the filter
is a method of its ``TarFile``.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11, 4):
    import tarfile
else:  # pragma: no cover - exercised on Debian 12's python3 (3.11.2)
    from backports import tarfile  # type: ignore[no-redef]

__all__ = ["tarfile"]
