"""Dockerfile heredocs: grouped as BuildKit groups them, and turned into what the classic builder and
the local sandbox can run, with BuildKit's results (the scripts run here in dash and bash)."""

from __future__ import annotations

import base64
import shutil
import subprocess

import pytest

from benchflow.errors import BuildError
from benchflow.sandbox import ca, dockerfile_heredoc, dockerfile_lines
from benchflow.sandbox.docker_build import rewrite_from
from benchflow.sandbox.local.dockerfile import RunStep, WriteStep, parse_dockerfile

SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]


def _only(text: str) -> dockerfile_lines.Instruction:
    found = [ins for ins in dockerfile_lines.parse(text) if ins.heredocs]
    assert len(found) == 1
    return found[0]


def _run(shell: str, script: str, stdin: str = "", cwd=None) -> str:
    done = subprocess.run([shell, "-c", script], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _classic(text: str) -> str:
    """The one RUN of ``text`` after translation, as the classic builder hands it to the shell."""
    out, files = dockerfile_heredoc.for_classic_builder(text)
    assert files == [] and "<<" not in out
    runs = [ins.text for ins in dockerfile_lines.parse(out) if ins.keyword == "RUN"]
    assert len(runs) == 1
    return runs[0].split(None, 1)[1]


def test_bodies_that_look_like_instructions_stay_with_their_heredoc():
    text = ("FROM a\nRUN mkdir -p /x && \\\n    cd /x && \\\n    cat > f.pom <<'POMEOF'\n<?xml version=\"1.0\"?>\n"
            "FROM x\nPOMEOF\nENV A=\"<<B\"\nRUN [\"sh\", \"-c\", \"cat <<EOF\"]\nCOPY <<EOF /etc/x\nRUN y\nEOF\n")
    groups = dockerfile_lines.parse(text)
    assert [g.keyword for g in groups] == ["FROM", "RUN", "ENV", "RUN", "COPY"]
    run = groups[1]
    assert run.text == "RUN mkdir -p /x &&     cd /x &&     cat > f.pom <<'POMEOF'"
    assert run.heredocs == (dockerfile_lines.Heredoc("POMEOF", False, False, '<?xml version="1.0"?>\nFROM x\n'),)
    assert not groups[2].heredocs and not groups[3].heredocs  # not RUN/COPY/ADD, JSON form
    assert groups[4].heredocs[0].body == "RUN y\n" and groups[4].heredocs[0].expand
    assert rewrite_from(text, "b").splitlines()[5] == "FROM x"
    assert ca.inject(text).splitlines().count("FROM x") == 1


def test_a_terminator_line_is_exact_and_a_dash_heredoc_strips_tabs():
    plain = _only("FROM a\nRUN cat <<EOF\n  EOF\nEOF\n")
    assert plain.heredocs[0].body == "  EOF\n" and plain.heredocs[0].content == "  EOF\n"
    chomped = _only("FROM a\nRUN cat <<-EOF\n\tone\n\t\tEOF\n")
    assert chomped.heredocs[0].body == "\tone\n" and chomped.heredocs[0].content == "one\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_run_of_only_a_heredoc_is_the_shells_script(shell):
    text = "FROM a\nRUN <<EOF\nset -e\nX=1\necho \"x=$X\"\nEOF\n"
    assert dockerfile_heredoc.run_script(_only(text)) == "set -e\nX=1\necho \"x=$X\"\n"
    assert _run(shell, _classic(text)) == "x=1\n"
    tabs = "FROM a\nRUN <<-EOF\n\techo tabbed\n\tEOF\n"
    assert dockerfile_heredoc.run_script(_only(tabs)) == "echo tabbed\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_a_shebang_body_is_written_to_a_file_and_run(shell, tmp_path):
    text = "FROM a\nRUN <<EOF\n#!/bin/sh\necho \"me=$(basename \"$0\") $*\"\nexit 3\nEOF\n"
    script = dockerfile_heredoc.run_script(_only(text))
    done = subprocess.run([shell, "-c", script], capture_output=True, text=True, env={"TMPDIR": str(tmp_path),
                                                                                     "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stdout) == (3, "me=EOF \n")
    assert list(tmp_path.iterdir()) == []  # the file is gone afterwards


@pytest.mark.parametrize("shell", SHELLS)
def test_a_command_with_heredocs_hands_the_shell_the_redirection(shell, tmp_path):
    text = ("FROM a\nRUN cat > quoted <<'Q' && cat > plain <<P && \\\n    cat <<-T\nsame $HOME\nQ\n$((1+1))\nP\n"
            "\tchomped\n\tT\n")
    ins = _only(text)
    assert [d.name for d in ins.heredocs] == ["Q", "P", "T"]
    assert dockerfile_heredoc.run_script(ins) == (  # each body, then its bare terminator, as BuildKit joins them
        "cat > quoted <<'Q' && cat > plain <<P &&     cat <<-T\nsame $HOME\nQ\n$((1+1))\nP\n\tchomped\nT")
    assert _run(shell, _classic(text), cwd=tmp_path) == "chomped\n"
    assert (tmp_path / "quoted").read_text() == "same $HOME\n" and (tmp_path / "plain").read_text() == "2\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_classic_line_leaves_stdin_to_the_script_and_keeps_its_status(shell):
    text = "FROM a\nRUN python3 - <<'PY'\nimport sys\nprint('from python')\nPY\n"
    assert _run(shell, _classic(text)) == "from python\n"
    reads = "FROM a\nRUN <<EOF\nread line; echo \"got $line\"\nEOF\n"
    assert _run(shell, _classic(reads), stdin="typed\n") == "got typed\n"
    failing = subprocess.run([shell, "-c", _classic("FROM a\nRUN <<EOF\nfalse\necho not-here\nexit 7\nEOF\n")],
                             capture_output=True, text=True)
    assert (failing.returncode, failing.stdout) == (7, "not-here\n")


def test_set_e_and_pipefail_of_the_shell_hold_inside_the_script():
    text = "FROM a\nRUN <<EOF\nfalse | true\necho survived\nEOF\n"
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", _classic(text)], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (1, "")


def test_a_long_script_is_split_over_continued_lines_the_parser_accepts():
    body = "".join(f"echo line {i} {'x' * 60}\n" for i in range(2000))
    out, _ = dockerfile_heredoc.for_classic_builder(f"FROM a\nRUN --network=host <<EOF\n{body}EOF\n")
    lines = out.splitlines()[1:]
    assert len(lines) > 2 and all(len(line) < 65535 for line in lines)
    assert all(line.endswith("\\") for line in lines[:-1]) and lines[0].startswith("RUN --network=host __bf_script=")
    joined = dockerfile_lines.parse(out)[1].text
    payload = joined.split("printf %s ", 1)[1].split(" ", 1)[0]
    assert base64.b64decode(payload).decode() == body


def test_escape_directive_continues_with_its_own_character():
    body = "echo " + "y" * 5000 + "\n"
    out, _ = dockerfile_heredoc.for_classic_builder(f"# escape=`\nFROM a\nRUN <<EOF\n{body}EOF\n")
    assert out.splitlines()[2].endswith("`")


def test_copy_heredocs_become_context_files():
    text = ("FROM a\nARG WHO=world\nENV HOME_DIR=/root\nCOPY --chown=1:2 --chmod=755 <<EOF <<'RAW' /opt/\n"
            "hi $WHO ${HOME_DIR}\nEOF\nkeep $WHO\nRAW\nCOPY --link <<-CONF /etc/app.conf\n\tkey=1\n\tCONF\n")
    out, files = dockerfile_heredoc.for_classic_builder(text)
    lines = out.splitlines()
    assert lines[3] == "COPY --chown=1:2 .benchflow-heredocs/0/EOF .benchflow-heredocs/1/RAW /opt/"
    assert lines[4] == "COPY .benchflow-heredocs/2/CONF /etc/app.conf"
    assert files == [dockerfile_heredoc.ContextFile(".benchflow-heredocs/0/EOF", b"hi world /root\n", 0o755),
                     dockerfile_heredoc.ContextFile(".benchflow-heredocs/1/RAW", b"keep $WHO\n", 0o755),
                     dockerfile_heredoc.ContextFile(".benchflow-heredocs/2/CONF", b"key=1\n", 0o644)]


def test_copy_heredoc_with_a_variable_the_dockerfile_does_not_set_is_refused():
    with pytest.raises(BuildError, match=r"line 2: COPY <<EOF expands \$PATH.*quote the terminator \(<<'EOF'\)"):
        dockerfile_heredoc.for_classic_builder("FROM a\nCOPY <<EOF /x\n$PATH\nEOF\n")


def test_a_stage_inherits_the_variables_of_the_stage_it_starts_from():
    text = "ARG V=1\nFROM a AS one\nARG V\nENV W=$V-2\nFROM one\nCOPY <<EOF /x\n$W\nEOF\n"
    assert dockerfile_heredoc.for_classic_builder(text)[1][0].data == b"1-2\n"


def test_an_unterminated_heredoc_is_refused():
    with pytest.raises(BuildError, match="heredoc <<EOF has no terminator line"):
        dockerfile_heredoc.for_classic_builder("FROM a\nRUN <<EOF\necho hi\n")


def test_local_sandbox_runs_the_script_in_the_dockerfiles_shell():
    default = parse_dockerfile("FROM a\nRUN python3 - <<'PY'\nprint(1)\nPY\n").steps[0]
    assert isinstance(default, RunStep) and default.argv == ("/bin/sh", "-c", "python3 - <<'PY'\nprint(1)\nPY")
    bash = parse_dockerfile('FROM a\nSHELL ["/bin/bash", "-o", "pipefail", "-c"]\nRUN <<EOF\nset -u\nEOF\n')
    assert bash.steps[0].argv == ("/bin/bash", "-o", "pipefail", "-c", "set -u\n")


def test_local_sandbox_writes_copy_heredocs():
    plan = parse_dockerfile("FROM a\nARG N=7\nWORKDIR /w\nCOPY --chmod=600 <<EOF f.txt conf/\nn=$N\nEOF\n")
    copy, write = plan.steps[1:]
    assert copy.sources == ("f.txt",) and copy.dest == "/w/conf" and copy.dest_is_dir
    assert isinstance(write, WriteStep) and write.files == (("EOF", "n=7\n"),)
    assert (write.dest, write.dest_is_dir, write.chmod) == ("/w/conf", True, 0o600)
    single = parse_dockerfile("FROM a\nCOPY <<'EOF' /etc/x\n$N\nEOF\n").steps[0]
    assert single.files == (("EOF", "$N\n"),) and single.dest == "/etc/x" and not single.dest_is_dir


@pytest.mark.parametrize("shell", SHELLS)
def test_a_spaced_heredoc_word_and_a_heredoc_fed_to_a_program(shell):
    spaced = "FROM a\nRUN << EOF\necho spaced\nEOF\n"
    assert dockerfile_heredoc.run_script(_only(spaced)) == "echo spaced\n"
    fed = "FROM a\nRUN <<EOF sh\necho fed to sh\nEOF\n"  # not only a heredoc: the shell runs `sh` with it as stdin
    assert dockerfile_heredoc.run_script(_only(fed)) == "<<EOF sh\necho fed to sh\nEOF"
    assert _run(shell, _classic(fed)) == "fed to sh\n"


def test_a_dockerfile_without_heredocs_is_handed_over_as_it_is():
    text = "FROM a\r\nRUN echo hi\r\n"
    assert dockerfile_heredoc.for_classic_builder(text) == (text, [])
