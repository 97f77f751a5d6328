"""Copy-out rules: what a sandbox wrote reaches the job folder without links out, special files or set-id bits.

Both entry points are exercised with the same hostile content: an engine tar
stream (docker, remote-docker) and a host folder the sandbox wrote (local).
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from benchflow.sandbox.copyout import CopyLimits, copy_out_tar, copy_out_tree

SECRET = "host-secret-value-4242"


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    path = tmp_path / "host" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _tar(entries: list[tuple]) -> bytes:
    """(name, kind, payload, mode) rows: kind file|dir|sym|lnk|fifo|chr."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, kind, payload, mode in entries:
            info = tarfile.TarInfo(name)
            info.mode = mode
            data = None
            if kind == "file":
                data = io.BytesIO(payload)
                info.size = len(payload)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
            elif kind in ("sym", "lnk"):
                info.type = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
                info.linkname = payload
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
            archive.addfile(info, data)
    return out.getvalue()


def _chunks(data: bytes, size: int = 7000) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def _hostile_tar(secret: Path) -> bytes:
    return _tar([
        ("agent", "dir", None, 0o777),
        ("agent/log.txt", "file", b"hello\n", 0o666),
        ("agent/tool", "file", b"#!/bin/sh\n", 0o4755),
        ("agent/sub", "dir", None, 0o2777),
        ("agent/sub/inner.txt", "file", b"inner\n", 0o600),
        ("agent/inside", "sym", "sub/inner.txt", 0o777),
        ("agent/sub/up", "sym", "../log.txt", 0o777),
        ("agent/sub/up2", "sym", "../log.txt", 0o777),
        ("agent/abs", "sym", str(secret), 0o777),
        ("agent/climb", "sym", "../" * 30 + str(secret).lstrip("/"), 0o777),
        ("agent/here", "sym", ".", 0o777),
        ("agent/chain", "sym", "here/../x", 0o777),          # lexically inside, really one level up
        ("agent/back", "sym", "../agent/log.txt", 0o777),   # out and back in by name
        ("agent/hard", "lnk", "agent/log.txt", 0o644),
        ("agent/hard-out", "lnk", "etc/passwd", 0o644),
        ("agent/fifo", "fifo", None, 0o666),
        ("agent/null", "chr", None, 0o666),
        ("agent/../escape", "file", b"x", 0o644),
        ("elsewhere/file", "file", b"x", 0o644),
        ("agent/sub/up/through", "file", b"x", 0o644),      # a name through a link
    ])


def _assert_safe_tree(root: Path, tmp_path: Path) -> None:
    """No link out, no special file, no set-id bit, fixed modes; the secret is nowhere."""
    real_root = os.path.realpath(root)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                real = os.path.realpath(path)
                assert real == real_root or real.startswith(real_root + os.sep), path
                continue
            assert stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode), path
            mode = stat.S_IMODE(info.st_mode)
            assert mode in ((0o755,) if stat.S_ISDIR(info.st_mode) else (0o644, 0o755)), (path, oct(mode))
            if stat.S_ISREG(info.st_mode):
                assert SECRET.encode() not in path.read_bytes()
    assert not (tmp_path / "escape").exists() and not (root.parent / "escape").exists()


def test_tar_stream_keeps_files_and_inside_links_and_drops_the_rest(tmp_path, host_secret):
    dest = tmp_path / "job" / "agent"
    report = copy_out_tar(_chunks(_hostile_tar(host_secret)), "agent", dest)
    _assert_safe_tree(dest, tmp_path)
    assert (dest / "log.txt").read_text() == "hello\n"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "log.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((dest / "tool").stat().st_mode) == 0o755          # set-uid gone, still runnable
    assert stat.S_IMODE((dest / "sub").stat().st_mode) == 0o755
    assert os.readlink(dest / "inside") == "sub/inner.txt" and (dest / "inside").read_text() == "inner\n"
    assert (dest / "sub" / "up2").read_text() == "hello\n"
    assert (dest / "sub" / "up").is_dir() and not (dest / "sub" / "up").is_symlink()  # "up/through" won the name
    assert (dest / "hard").read_text() == "hello\n"
    for gone in ("abs", "climb", "chain", "back", "hard-out", "fifo", "null"):
        assert not os.path.lexists(dest / gone), gone
    assert not (tmp_path / "job" / "elsewhere").exists()
    reasons = {row["path"]: row["reason"] for row in report.dropped}
    assert "absolute" in reasons["abs"] and "outside" in reasons["climb"] and "outside" in reasons["chain"]
    assert "device" in reasons["null"] and "FIFO" in reasons["fifo"]
    assert report.n_dropped == len(report.dropped) >= 9
    assert report.note() is not None and report.note()["n_dropped"] == report.n_dropped


def test_host_tree_gets_the_same_rules(tmp_path, host_secret):
    src = tmp_path / "sandbox" / "logs" / "agent"
    (src / "sub").mkdir(parents=True)
    (src / "log.txt").write_text("hello\n")
    (src / "tool").write_text("#!/bin/sh\n")
    os.chmod(src / "tool", 0o4755)
    os.chmod(src / "sub", 0o2777)
    (src / "sub" / "inner.txt").write_text("inner\n")
    (src / "inside").symlink_to("sub/inner.txt")
    (src / "abs").symlink_to(host_secret)
    (src / "climb").symlink_to(os.path.relpath(host_secret, src))
    (src / "dirlink").symlink_to(host_secret.parent)           # a link to a folder is not walked
    os.mkfifo(src / "fifo")
    device = os.geteuid() == 0
    if device:
        os.mknod(src / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    dest = tmp_path / "job" / "agent"
    report = copy_out_tree(src, dest)
    _assert_safe_tree(dest, tmp_path)
    assert (dest / "log.txt").read_text() == "hello\n" and (dest / "inside").read_text() == "inner\n"
    assert stat.S_IMODE((dest / "tool").stat().st_mode) == 0o755
    for gone in ("abs", "climb", "dirlink", "fifo", "null"):
        assert not os.path.lexists(dest / gone), gone
    reasons = {row["path"]: row["reason"] for row in report.dropped}
    assert "FIFO" in reasons["fifo"] and "outside" in reasons["climb"]
    if device:
        assert "device" in reasons["null"]
    else:
        pytest.skip("device node case needs root (mknod); the rest passed")


def test_per_file_cap_keeps_the_head_and_records_the_cut(tmp_path):
    big = bytes(range(256)) * 400  # 102400 bytes
    limits = CopyLimits(file_bytes=4096, total_bytes=1 << 20)
    data = _tar([("v", "dir", None, 0o755), ("v/big.log", "file", big, 0o644), ("v/small", "file", b"ok", 0o644)])
    report = copy_out_tar(_chunks(data), "v", tmp_path / "v", limits)
    assert (tmp_path / "v" / "big.log").read_bytes() == big[:4096]
    assert (tmp_path / "v" / "small").read_bytes() == b"ok"
    assert report.cut == [{"path": "big.log", "size": len(big), "kept": 4096}] and report.stopped is None

    src = tmp_path / "src"
    src.mkdir()
    (src / "big.log").write_bytes(big)
    report = copy_out_tree(src, tmp_path / "w", limits)
    assert (tmp_path / "w" / "big.log").read_bytes() == big[:4096]
    assert report.cut == [{"path": "big.log", "size": len(big), "kept": 4096}]


@pytest.mark.parametrize("via", ["tar", "tree"])
def test_per_copy_cap_stops_the_copy_and_says_so(tmp_path, via):
    limits = CopyLimits(file_bytes=1 << 20, total_bytes=64 * 1024)
    files = [(f"v/f{i:02}", "file", b"z" * 10_000, 0o644) for i in range(20)]
    if via == "tar":
        report = copy_out_tar(_chunks(_tar([("v", "dir", None, 0o755), *files]), 4096), "v", tmp_path / "v", limits)
    else:
        src = tmp_path / "src"
        src.mkdir()
        for name, _, payload, _ in files:
            (src / name.removeprefix("v/")).write_bytes(payload)
        report = copy_out_tree(src, tmp_path / "v", limits)
    written = sum(p.stat().st_size for p in (tmp_path / "v").iterdir())
    assert written <= 64 * 1024 < 200_000
    assert report.stopped and "per-copy cap" in report.stopped
    assert report.note()["stopped"] == report.stopped


def test_entry_cap_stops_the_copy(tmp_path):
    data = _tar([("v", "dir", None, 0o755)] + [(f"v/e{i}", "file", b"", 0o644) for i in range(50)])
    report = copy_out_tar([data], "v", tmp_path / "v", CopyLimits(entries=10))
    assert len(list((tmp_path / "v").iterdir())) < 10 and "entries" in report.stopped


def test_a_clean_copy_has_no_note_and_merges_into_an_existing_folder(tmp_path):
    dest = tmp_path / "verifier"
    dest.mkdir()
    (dest / "kept-from-before.txt").write_text("x")
    report = copy_out_tar([_tar([("verifier", "dir", None, 0o777), ("verifier/reward.txt", "file", b"1\n", 0o666)])],
                          "verifier", dest)
    assert report.note() is None and report.files == 1 and report.bytes == 2
    assert (dest / "reward.txt").read_text() == "1\n" and (dest / "kept-from-before.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".bf-get-")]


def test_a_copied_path_that_is_itself_a_link_out_brings_nothing(tmp_path, host_secret):
    report = copy_out_tar([_tar([("reward.txt", "sym", str(host_secret), 0o777)])], "reward.txt",
                          tmp_path / "reward.txt")
    assert not os.path.lexists(tmp_path / "reward.txt") and report.n_dropped == 1
    src = tmp_path / "src-link"
    src.symlink_to(host_secret)
    copy_out_tree(src, tmp_path / "out.txt")
    assert not os.path.lexists(tmp_path / "out.txt")


def _tree(root: Path) -> dict[str, tuple[str, str]]:
    """Every path under ``root`` -> (kind, content or link target), for comparing two copies."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            out[rel] = ("dir", oct(stat.S_IMODE(path.stat().st_mode)))
        else:
            out[rel] = ("file", path.read_bytes().decode(errors="replace") + oct(stat.S_IMODE(path.stat().st_mode)))
    return out


def _logs_tar(secret: Path) -> bytes:
    """An archive of /logs: the hostile agent folder, an artifacts folder, a verifier folder and a stray file."""
    agent = [(f"logs/{name}", kind, payload, mode) for name, kind, payload, mode in _tar_rows(secret)]
    return _tar([("logs", "dir", None, 0o755), *agent,
                 ("logs/artifacts", "dir", None, 0o777), ("logs/artifacts/out.txt", "file", b"made\n", 0o600),
                 ("logs/verifier", "dir", None, 0o755), ("logs/verifier/reward.txt", "file", b"1", 0o644),
                 ("logs/stray", "file", b"x" * 5000, 0o644)])


def _tar_rows(secret: Path) -> list[tuple]:
    with tarfile.open(fileobj=io.BytesIO(_hostile_tar(secret))) as archive:
        rows = []
        for member in archive.getmembers():
            kind = ("dir" if member.isdir() else "sym" if member.issym() else "lnk" if member.islnk() else
                    "fifo" if member.isfifo() else "chr" if member.ischr() else "file")
            payload = archive.extractfile(member).read() if kind == "file" else member.linkname or None
            rows.append((member.name, kind, payload, member.mode))
    return [(n, k, ("logs/" + p if k == "lnk" and p.startswith("agent/") else p), m) for n, k, p, m in rows]


def test_one_archive_of_the_parent_copies_each_child_as_its_own_copy_would(tmp_path, host_secret):
    from benchflow.sandbox.copyout import copy_out_tar_split

    data = _logs_tar(host_secret)
    one = {"agent": tmp_path / "one" / "agent", "artifacts": tmp_path / "one" / "artifacts"}
    reports = copy_out_tar_split(_chunks(data), "logs", one)
    assert reports is not None and set(reports) == {"agent", "artifacts"}
    for name, local in one.items():  # the same as an archive of that child alone (the engine's top is its name)
        alone = tarfile.open(fileobj=io.BytesIO(data))
        rows = [m for m in alone.getmembers() if m.name == f"logs/{name}" or m.name.startswith(f"logs/{name}/")]
        single = io.BytesIO()
        with tarfile.open(fileobj=single, mode="w", format=tarfile.PAX_FORMAT) as out:
            for member in rows:
                member.name = member.name.removeprefix("logs/")
                if member.islnk():
                    member.linkname = member.linkname.removeprefix("logs/")
                out.addfile(member, alone.extractfile(member) if member.isreg() else None)
        report = copy_out_tar(_chunks(single.getvalue()), name, tmp_path / "each" / name)
        assert _tree(local) == _tree(tmp_path / "each" / name), name
        assert reports[name].note() == report.note(), name
        _assert_safe_tree(local, tmp_path)
    assert (one["artifacts"] / "out.txt").read_text() == "made\n"
    assert not (tmp_path / "one" / "verifier").exists() and not (tmp_path / "one" / "stray").exists()


def test_a_child_that_is_not_there_is_none_and_leaves_nothing(tmp_path):
    from benchflow.sandbox.copyout import copy_out_tar_split

    data = _tar([("logs", "dir", None, 0o755), ("logs/agent", "dir", None, 0o755),
                 ("logs/agent/a", "file", b"a", 0o644)])
    reports = copy_out_tar_split([data], "logs", {"agent": tmp_path / "agent", "artifacts": tmp_path / "artifacts"})
    assert reports["artifacts"] is None and not (tmp_path / "artifacts").exists()
    assert reports["agent"].clean and (tmp_path / "agent" / "a").read_text() == "a"


@pytest.mark.parametrize("rows", [
    [("logs", "sym", "/etc", 0o777)],                                                 # the parent is a link
    [("logs", "dir", None, 0o755), ("logs/agent", "sym", "/etc", 0o777)],             # a child is a link
    [("logs", "dir", None, 0o755), ("logs/agent", "file", b"not a folder", 0o644)],   # a child is a file
    [("logs", "dir", None, 0o755), ("logs/agent", "dir", None, 0o755),
     ("logs/stray", "file", b"z" * 70_000, 0o644)],                                  # over the read cap
    [("logs", "dir", None, 0o755), ("logs/verifier", "dir", None, 0o755), ("logs/verifier/r", "file", b"1", 0o644),
     ("logs/agent", "dir", None, 0o755), ("logs/agent/r", "lnk", "logs/verifier/r", 0o644)],  # a file met elsewhere
])
def test_an_archive_the_split_cannot_take_moves_nothing_into_place(tmp_path, rows):
    from benchflow.sandbox.copyout import copy_out_tar_split

    limits = CopyLimits(total_bytes=64 * 1024)
    local = tmp_path / "job" / "agent"
    local.parent.mkdir()
    assert copy_out_tar_split(_chunks(_tar(rows), 4096), "logs", {"agent": local}, limits) is None
    assert not local.exists() and list((tmp_path / "job").iterdir()) == []


def test_a_childs_entry_cap_stops_that_child_only(tmp_path):
    from benchflow.sandbox.copyout import copy_out_tar_split

    data = _tar([("logs", "dir", None, 0o755), ("logs/agent", "dir", None, 0o755),
                 *[(f"logs/agent/e{i}", "file", b"", 0o644) for i in range(30)],
                 ("logs/artifacts", "dir", None, 0o755), ("logs/artifacts/x", "file", b"x", 0o644)])
    reports = copy_out_tar_split([data], "logs", {"agent": tmp_path / "agent", "artifacts": tmp_path / "artifacts"},
                                 CopyLimits(entries=10))
    assert "entries" in reports["agent"].stopped and len(list((tmp_path / "agent").iterdir())) < 10
    assert reports["artifacts"].clean and (tmp_path / "artifacts" / "x").read_text() == "x"


def test_only_siblings_under_one_folder_are_read_together():
    from benchflow.sandbox.downloads import siblings

    assert siblings(["/logs/agent", "/logs/artifacts/"]) == ("/logs", ["agent", "artifacts"])
    assert siblings(["/logs/agent", "/app/out"]) is None          # two parents
    assert siblings(["/logs/agent", "/logs/x/../agent"]) is None  # the same folder twice
    assert siblings(["/agent", "/artifacts"]) is None             # never an archive of the whole root
    assert siblings(["logs/agent", "logs/artifacts"]) is None     # relative paths
