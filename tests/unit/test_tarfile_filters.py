"""Archives are unpacked under tarfile's ``data`` filter on every supported Python (3.11.2 included)."""

from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path

import pytest

from benchflow.util import tarfile_filters


def _archive(tarfile, *members: tuple[str, str | None]) -> bytes:
    """A tar holding ``(name, link target or None for a small file)`` members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, target in members:
            info = tarfile.TarInfo(name)
            if target is None:
                info.size = 2
                tar.addfile(info, io.BytesIO(b"hi"))
            else:
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
    return buffer.getvalue()


def _older_python(monkeypatch: pytest.MonkeyPatch):
    """``tarfile_filters`` as Debian 12's python3 (3.11.2, no extraction filters) would load it."""
    pytest.importorskip("backports.tarfile")
    monkeypatch.setattr(sys, "version_info", (3, 11, 2, "final", 0))
    try:
        return importlib.reload(tarfile_filters).tarfile
    finally:
        monkeypatch.undo()
        importlib.reload(tarfile_filters)


@pytest.fixture(params=["this python", "python 3.11.2"])
def tarfile(request, monkeypatch):
    return tarfile_filters.tarfile if request.param == "this python" else _older_python(monkeypatch)


def test_older_python_gets_the_backport(monkeypatch):
    assert _older_python(monkeypatch).__name__ == "backports.tarfile"
    assert tarfile_filters.tarfile.__name__ == ("tarfile" if sys.version_info >= (3, 11, 4) else "backports.tarfile")


@pytest.mark.parametrize("member", [("../escape.txt", None), ("link", "/etc/passwd"),
                                    ("up", "../../outside")])
def test_data_filter_refuses_what_leaves_the_folder(tmp_path: Path, tarfile, member):
    blob = _archive(tarfile, ("ok.txt", None), member)
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar, pytest.raises(tarfile.FilterError):
        tar.extractall(tmp_path / "into", filter="data")
    assert not (tmp_path / "escape.txt").exists()


def test_data_filter_unpacks_plain_files_and_keeps_absolute_names_inside(tmp_path: Path, tarfile):
    blob = _archive(tarfile, ("dir/ok.txt", None), ("dir/near", "ok.txt"), ("/abs.txt", None))
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(tmp_path / "into", filter="data")
    assert (tmp_path / "into" / "dir" / "near").read_text() == "hi"
    assert (tmp_path / "into" / "abs.txt").read_text() == "hi"
