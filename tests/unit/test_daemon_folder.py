"""The daemon's private folder and socket checks (no daemon process needed)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from benchflow.daemon import client, paths
from benchflow.daemon.server import peer_uid


def test_the_folder_is_made_private_under_the_runtime_dir(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    folder = paths.folder()
    assert folder == tmp_path / "benchflow"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_without_a_runtime_dir_it_lives_in_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("BENCHFLOW_CACHE", str(tmp_path / "cache"))
    assert paths.socket_path() == tmp_path / "cache" / "daemon" / "daemon.sock"


def test_a_folder_others_may_enter_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "benchflow").mkdir(mode=0o755)
    (tmp_path / "benchflow").chmod(0o755)
    with pytest.raises(paths.DaemonFolderError, match="chmod 700") as caught:
        paths.folder()
    assert caught.value.exit_code == 2


def test_peer_credentials_name_the_connecting_user() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert peer_uid(left) == os.getuid()


def test_a_left_socket_of_a_dead_daemon_is_stale_and_removed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    sock_path = paths.socket_path()
    with socket.socket(socket.AF_UNIX) as listener:  # bound, then closed: nobody answers any more
        listener.bind(str(sock_path))
    paths.state_path().write_text('{"pid": 999999999}')
    conn, note = client.connect()
    assert conn is None
    assert note == "the daemon (pid 999999999) is gone; its stale socket was removed"
    assert not sock_path.exists() and not paths.state_path().exists()
    assert client.connect() == (None, None)  # nothing left: simply no daemon
