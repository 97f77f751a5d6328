"""How the daytona sandbox turns argv, stdin and build contexts into what Daytona runs (no Daytona needed:
the session command lines run in a local ``sh``)."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

from benchflow.sandbox import SandboxSpec
from benchflow.sandbox import marked_commands as cmds
from benchflow.sandbox.daytona.build import context_hash, write_context
from benchflow.sandbox.remote_dockerfile import dockerfile_text

HOSTILE = ["printf", "%s|", "$(touch pwned)", "a b", "it's", "`id`", "; rm -rf x", "--"]


def test_a_command_line_passes_every_argument_literally(tmp_path):
    line = cmds.command_line(cmds.argv(HOSTILE, cwd=str(tmp_path), env={"K": "v w"}, user=None), "m1")
    out = subprocess.run(["sh", "-c", line], check=False, capture_output=True, text=True, cwd="/")
    assert out.stdout == "|".join(HOSTILE[2:]) + "|"
    assert not (tmp_path / "pwned").exists() and not Path("/pwned").exists()


def test_env_cwd_marker_and_empty_stdin(tmp_path):
    script = 'pwd; echo "$K"; echo "$BENCHFLOW_EXEC_ID"; cat; echo end'
    line = cmds.command_line(cmds.argv(["sh", "-c", script], cwd=str(tmp_path), env={"K": "v"}, user="root"), "mk")
    out = subprocess.run(["sh", "-c", line], check=False, capture_output=True, text=True, input="never read", timeout=10)
    assert out.stdout.split("\n")[:4] == [str(tmp_path), "v", "mk", "end"]


def test_stdin_comes_from_the_uploaded_file(tmp_path):
    (tmp_path / "in").write_bytes(b"fed")
    line = cmds.command_line(cmds.argv(["cat"], cwd="/", env=None, user=None), "m", stdin_path=str(tmp_path / "in"))
    assert subprocess.run(["sh", "-c", line], check=False, capture_output=True).stdout == b"fed"


def test_a_non_root_user_goes_through_su_without_option_parsing_of_the_command():
    words = cmds.argv(["sh", "-c", "id"], cwd="/w", env=None, user="agent")
    assert words[:7] == ["su", "-s", "/bin/sh", "-c", 'cd "$0" && exec "$@"', "--", "agent"]
    assert words[7:] == ["/w", "env", "sh", "-c", "id"]


def _stream(words: list[str], feed: str, path: str | None = None) -> tuple[int, bytes]:
    """Run a streaming session line in a local sh; (exit status, stdout decoded as the sandbox does)."""
    line = cmds.streaming_line(cmds.argv(words, cwd="/", env=None, user=None), f"m{os.getpid()}")
    env = os.environ | ({"PATH": path} if path else {})
    out = subprocess.run(["sh", "-c", line], input=feed.encode(), check=False, capture_output=True, timeout=10, env=env)
    decoder = cmds.Decoder()
    text = out.stdout.decode()
    return out.returncode, b"".join(decoder.feed(text[i:i + 7]) for i in range(0, len(text), 7))


def test_the_stream_relay_carries_binary_data_both_ways_and_end_of_file():
    data = bytes(range(256)) + b"\nno newline at the end"
    feed = cmds.relay_chunk(data[:100]) + cmds.relay_chunk(data[100:]) + cmds.EOF_LINE.decode()
    assert _stream(["cat"], feed) == (0, data)


def test_a_stream_keeps_the_command_exit_status():
    assert _stream(["sh", "-c", "echo out; exit 7"], cmds.EOF_LINE.decode()) == (7, b"out\n")


def test_without_python_or_node_the_stream_is_text_as_is(tmp_path):
    for tool in ("sh", "cat", "base64", "printf", "rm", "env"):
        (tmp_path / tool).symlink_to(subprocess.run(["sh", "-c", f"command -v {tool}"], check=False, capture_output=True,
                                                    text=True).stdout.strip() or f"/bin/{tool}")
    assert _stream(["cat"], cmds.relay_chunk(b"plain text\n") + cmds.EOF_LINE.decode(), path=str(tmp_path)) == (
        0, b"plain text\n")


def test_output_is_capped_with_a_note_of_what_was_cut():
    text, cut = cmds.capped("a" * 1500, 1000)
    assert cut and text.startswith("a" * 1000) and "500 more bytes" in text
    assert cmds.capped("short", 1000) == ("short", False)


def context_archive(spec: SandboxSpec) -> io.BytesIO | None:
    out = io.BytesIO()
    return out if write_context(spec, out) else None


def _spec(env: Path | None, **fields) -> SandboxSpec:
    return SandboxSpec(name="t", environment_dir=env, cache_key="k", **fields)


def _env(root: Path) -> Path:
    env = root / "environment"
    (env / "skills" / "s").mkdir(parents=True)
    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\nCOPY skills /skills\nCOPY app.txt /app.txt\n")
    (env / "app.txt").write_text("x\n")
    (env / "skills" / "s" / "SKILL.md").write_text("skill\n")
    return env


def test_the_build_context_is_content_addressed(tmp_path):
    first, second = _env(tmp_path / "a"), _env(tmp_path / "b")
    os.utime(second / "app.txt", (1, 1))
    assert context_hash(context_archive(_spec(first))) == context_hash(context_archive(_spec(second)))
    (second / "app.txt").write_text("changed\n")
    assert context_hash(context_archive(_spec(first))) != context_hash(context_archive(_spec(second)))


def test_a_no_skill_build_leaves_the_skills_out_of_context_and_dockerfile(tmp_path):
    env = _env(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(context_archive(_spec(env, bundled_skills=False)).getvalue())) as archive:
        names = archive.getnames()
    assert "app.txt" in names and not any(name.startswith("skills") for name in names)
    copies = lambda text: [line for line in text.splitlines() if line.startswith("COPY skills")]
    assert copies(dockerfile_text(_spec(env, bundled_skills=False))) == []
    assert copies(dockerfile_text(_spec(env))) == ["COPY skills /skills"]


def test_a_prebuilt_image_needs_no_context(tmp_path):
    spec = _spec(None, image="ghcr.io/x/y:1")
    assert dockerfile_text(spec) == "FROM ghcr.io/x/y:1\n" and context_archive(spec) is None
