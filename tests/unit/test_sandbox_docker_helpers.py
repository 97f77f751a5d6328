"""Pure helpers of the docker backend: Dockerfile rewrites, tags, tar safety, cleanup rules."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from benchflow.sandbox import ca
from benchflow.sandbox.base import CappedOutput, OwnedSandbox, SandboxSpec
from benchflow.sandbox.copyout import copy_out_tar
from benchflow.sandbox.docker_build import image_tag, rewrite_from
from benchflow.sandbox.docker_exec import PidHeader
from benchflow.sandbox.docker_setup import parse_ready, resolve_workdir
from benchflow.sandbox.orphans import decide, reap
from benchflow.sandbox.tarstream import pack


def test_rewrite_from_replaces_base_images_but_not_stage_references():
    text = "FROM --platform=linux/amd64 python:3.12 AS build\nRUN make\nFROM build AS final\nFROM alpine\n"
    assert rewrite_from(text, "debian:bookworm-slim").splitlines() == [
        "FROM --platform=linux/amd64 debian:bookworm-slim AS build", "RUN make",
        "FROM build AS final", "FROM debian:bookworm-slim"]


def test_ca_inject_follows_every_from_including_continued_lines():
    out = ca.inject("FROM a \\\n  AS one\nRUN x\nfrom b\n").splitlines()
    assert out[2].startswith("COPY .benchflow-ca.crt") and out[3].startswith("ENV SSL_CERT_FILE=")
    assert out[5] == "from b" and out[6].startswith("COPY")


HEREDOC_DOCKERFILE = """FROM python:3.12-slim
RUN python3 - <<'PY'
from huggingface_hub import snapshot_download
snapshot_download("x")
PY
RUN cat > /etc/x <<-EOF
	from here
	EOF
RUN echo done
"""


def test_a_heredoc_line_starting_with_from_is_script_text_not_an_instruction():
    """A real SkillsBench Dockerfile (latex-formula-extraction) has ``from huggingface_hub`` in a
    ``RUN python3 - <<'PY'`` body: neither the base-image swap nor the CA lines may land there."""
    rewritten = rewrite_from(HEREDOC_DOCKERFILE, "debian:bookworm-slim").splitlines()
    assert rewritten[0] == "FROM debian:bookworm-slim"
    assert rewritten[2] == "from huggingface_hub import snapshot_download"
    assert rewritten[6:8] == ["\tfrom here", "\tEOF"]
    injected = ca.inject(HEREDOC_DOCKERFILE).splitlines()
    assert [i for i, line in enumerate(injected) if line.startswith("COPY .benchflow-ca.crt")] == [1]
    assert injected[4:7] == ["from huggingface_hub import snapshot_download", 'snapshot_download("x")', "PY"]


def test_image_tag_follows_the_cache_key_and_overrides(tmp_path):
    base = SandboxSpec(name="My Task!", environment_dir=tmp_path, cache_key="abc")
    tag = image_tag(base)
    assert tag.startswith("benchflow/my-task:")
    assert image_tag(SandboxSpec(name="My Task!", environment_dir=tmp_path, cache_key="abc")) == tag
    assert image_tag(SandboxSpec(name="My Task!", environment_dir=tmp_path, cache_key="abd")) != tag
    other = SandboxSpec(name="My Task!", environment_dir=tmp_path, cache_key="abc", base_image_override="x")
    assert image_tag(other) != tag


def test_workdir_resolution():
    assert resolve_workdir(None, "/app") == "/app"
    assert resolve_workdir("/work", "/app") == "/work"
    assert resolve_workdir(None, "/") == "/root"
    assert resolve_workdir(None, "") == "/root"


def test_setup_marker_parsing():
    assert parse_ready("noise\n") is None
    assert parse_ready("__benchflow_setup__ 0\n") == (0, "")
    assert parse_ready("mkdir: denied\n__benchflow_setup__ 1\n") == (1, "mkdir: denied\n")


def test_pid_header_is_stripped_across_chunks():
    header = PidHeader()
    assert header.feed(b"12") == b""
    assert header.feed(b"3\nhello") == b"hello"
    assert header.feed(b" world") == b" world" and header.pid == 123


def test_output_cap_counts_what_was_cut():
    stream = CappedOutput(cap=5)
    stream.add(b"abc")
    stream.add(b"defgh")
    assert bytes(stream.data) == b"abcde" and stream.dropped == 3
    assert "3 more bytes" in stream.text()


def test_tar_round_trip_keeps_runnable_files_and_symlinks(tmp_path):
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "x.sh").write_text("echo\n")
    (src / "d" / "x.sh").chmod(0o751)
    (src / "ln").symlink_to("d/x.sh")
    archive = pack(src, "/srv/copy")
    names = tarfile.open(fileobj=archive).getnames()
    assert "srv/copy/d/x.sh" in names
    archive.seek(0)
    # the engine answers with the top folder named after the path's last part
    rebased = io.BytesIO()
    with tarfile.open(fileobj=archive) as tin, tarfile.open(fileobj=rebased, mode="w") as tout:
        for member in tin.getmembers():
            data = tin.extractfile(member) if member.isfile() else None
            member.name = member.name.removeprefix("srv/")
            tout.addfile(member, data)
    copy_out_tar([rebased.getvalue()], "copy", tmp_path / "out")
    assert oct((tmp_path / "out" / "d" / "x.sh").stat().st_mode & 0o777) == oct(0o755)  # copy-out fixes modes
    assert os.readlink(tmp_path / "out" / "ln") == "d/x.sh"


@pytest.mark.parametrize("name,link", [("../escape", None), ("top/../../escape", None),
                                       ("top/hard", "../../etc/passwd")])
def test_copy_out_drops_members_outside_the_destination(tmp_path, name, link):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo(name)
        if link:
            info.type, info.linkname = tarfile.LNKTYPE, link
            archive.addfile(info)
        else:
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
    report = copy_out_tar([buffer.getvalue()], "top", tmp_path / "dest" / "top")
    assert report.n_dropped == 1
    assert not (tmp_path / "escape").exists() and not (tmp_path / "dest" / "escape").exists()


def _row(**fields) -> OwnedSandbox:
    base = dict(id="c0ffee", name="bf-x", sandbox="docker", engine="docker", state="running", image="i", created=1000.0,
                job=None, trial=None, task=None, owner="none", owner_alive=None, kept=False)
    base.update(fields)
    return OwnedSandbox(**base)


def test_cleanup_rules():
    now = 1000.0 + 3600
    rule = lambda row, **kw: decide(row, max_age_sec=kw.get("age", 7200), everything=kw.get("all", False),  # noqa: E731
                                    ids=kw.get("ids", []), now=now)
    assert rule(_row(owner_alive=False))[0] is True                      # orphan, any age
    assert rule(_row(owner_alive=True))[0] is False                      # live run
    assert rule(_row(owner_alive=True), all=True)[0] is False            # --all spares live runs
    assert rule(_row(owner_alive=True), ids=["c0f"])[0] is True          # --id takes anything
    assert rule(_row())[0] is False and rule(_row(), age=60)[0] is True  # unowned: by age
    assert rule(_row(kept=True, owner_alive=False))[0] is False          # kept: release it
    assert rule(_row(kept=True), all=True)[0] is True
    assert rule(_row(owner_alive=False), ids=["other"])[0] is False      # --id only touches named


class _Leftovers:
    """A backend holding ``rows`` for one job; records what it is asked to remove."""

    name = "fake"

    def __init__(self, rows: list[OwnedSandbox]) -> None:
        self.rows, self.removed = rows, []

    def leftovers(self, owner=None):
        return [row for row in self.rows if row.job == owner]

    def remove(self, ids):
        self.removed.extend(ids)
        return {}


def test_a_resumed_job_removes_its_dead_runs_sandboxes_but_not_the_ones_it_kept():
    backend = _Leftovers([_row(id="dead", job="j", owner_alive=False),
                          _row(id="kept", job="j", owner_alive=False, kept=True),
                          _row(id="live", job="j", owner_alive=True),
                          _row(id="other-job", job="k", owner_alive=False)])
    assert reap(backend, "j") == ["dead"] and backend.removed == ["dead"]
