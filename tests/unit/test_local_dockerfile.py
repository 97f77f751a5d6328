"""The Dockerfile subset of the local sandbox: what it honours and what it refuses."""

from __future__ import annotations

import pytest

from benchflow.errors import CapabilityError
from benchflow.sandbox.local.dockerfile import (
    DEFAULT_SHELL,
    CopyStep,
    MkdirStep,
    RunStep,
    parse_dockerfile,
    substitute,
)


def test_workdir_env_user_and_steps_in_order():
    plan = parse_dockerfile(
        "# syntax=docker/dockerfile:1\n"
        "FROM debian:bookworm-slim AS base\n"
        "ARG VERSION=1.2\n"
        "ENV APP=/srv/app \\\n"
        "    NOTE=\"v $VERSION\"\n"
        "WORKDIR $APP\n"
        "WORKDIR sub\n"
        "COPY --chown=1000:1000 --chmod=755 a.sh b/ ./bin/\n"
        "RUN echo hi > f \\\n"
        "  # a comment inside a continuation\n"
        "  && cat f\n"
        "USER agent:agent\n"
        'RUN ["python3", "-c", "print(1)"]\n'
        "CMD [\"sleep\", \"inf\"]\n")
    assert plan.base == "debian:bookworm-slim"
    assert plan.env == {"APP": "/srv/app", "NOTE": "v 1.2"}
    assert plan.workdir == "/srv/app/sub"
    assert plan.user == "agent"
    kinds = [type(s) for s in plan.steps]
    assert kinds == [MkdirStep, MkdirStep, CopyStep, RunStep, RunStep]
    copy = plan.steps[2]
    assert copy.sources == ("a.sh", "b/") and copy.dest == "/srv/app/sub/bin" and copy.dest_is_dir
    assert copy.chown == "1000:1000" and copy.chmod == 0o755
    run = plan.steps[3]
    assert run.argv == (*DEFAULT_SHELL, "echo hi > f  && cat f")
    assert run.workdir == "/srv/app/sub" and run.user is None
    assert dict(run.env)["VERSION"] == "1.2"
    assert plan.steps[4].argv == ("python3", "-c", "print(1)") and plan.steps[4].user == "agent"


def test_legacy_env_form_shell_and_root_user():
    plan = parse_dockerfile("FROM x\nENV GREETING hello big world\nSHELL [\"/bin/bash\", \"-c\"]\n"
                            "USER root\nRUN echo $GREETING\n")
    assert plan.env == {"GREETING": "hello big world"}
    assert plan.user is None
    assert plan.steps[0].argv[:2] == ("/bin/bash", "-c")


def test_add_of_local_file_is_an_extracting_copy():
    step = parse_dockerfile("FROM x\nADD files.tar.gz /opt/\n").steps[0]
    assert isinstance(step, CopyStep) and step.extract and step.dest == "/opt" and step.dest_is_dir


def test_base_image_override_and_digest_changes_with_content():
    a = parse_dockerfile("FROM x\nRUN true\n", base_image_override="y")
    b = parse_dockerfile("FROM x\nRUN false\n")
    assert a.base == "y"
    assert a.digest() != b.digest()
    assert a.digest() == parse_dockerfile("FROM x\nRUN true\n", base_image_override="y").digest()


def test_only_workdir_needs_no_layer():
    assert not parse_dockerfile("FROM x\nWORKDIR /app\nENV A=1\n").has_layer_steps
    assert parse_dockerfile("FROM x\nRUN true\n").has_layer_steps


@pytest.mark.parametrize(("text", "fragment"), [
    ("FROM x\nADD https://example.com/a.tgz /opt/\n", "ADD of a URL"),
    ("FROM x AS b\nRUN make\nFROM y\nCOPY --from=b /out /out\n", "multi-stage"),
    ("FROM x\nCOPY --from=builder /out /out\n", "COPY --from"),
    ("FROM x\nRUN --mount=type=cache,target=/root/.cache pip install x\n", "RUN --mount"),
    ("FROM x\nCOPY ../secret /s\n", "outside the build context"),
    ("FROM x\nFROBNICATE now\n", "unknown instruction FROBNICATE"),
    ("RUN true\n", "before FROM"),
    ("WORKDIR /app\n", "before FROM"),
])
def test_refusals_name_the_step_and_suggest_docker(text, fragment):
    with pytest.raises(CapabilityError) as info:
        parse_dockerfile(text, path="tasks/t/environment/Dockerfile")
    message = str(info.value)
    assert fragment in message
    assert "tasks/t/environment/Dockerfile:" in message
    assert "--sandbox docker" in message
    assert info.value.exit_code == 2


def test_refusal_quotes_the_offending_line_number():
    with pytest.raises(CapabilityError, match=r"Dockerfile:3: `ADD http://h/x /x`"):
        parse_dockerfile("FROM x\nRUN true\nADD http://h/x /x\n", path="Dockerfile")


def test_substitute_forms():
    values = {"A": "1", "E": ""}
    assert substitute("$A-${A}-${B:-dflt}-${A:+set}-${E:+no}-\\$A", values) == "1-1-dflt-set--$A"


def test_here_string_is_not_a_heredoc():
    plan = parse_dockerfile("FROM x\nRUN bash -c 'cat <<< hi'\n")
    assert plan.steps[0].argv[-1] == "bash -c 'cat <<< hi'"
