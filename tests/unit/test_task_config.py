"""TaskConfig validation, profiles/shorthands, legacy task.toml and load_task (contracts §1.4-1.7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchflow.errors import TaskError
from benchflow.tasks import (
    TaskConfig,
    load_legacy_config,
    load_task,
    normalize_frontmatter,
    read_legacy,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "hello-world"


def write_task(root: Path, frontmatter: str, body: str = "## prompt\n\nDo it.\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.md").write_text(f"---\n{frontmatter}---\n\n{body}", encoding="utf-8")
    return root


def load_error(tmp_path: Path, frontmatter: str, body: str = "## prompt\n\nDo it.\n") -> str:
    with pytest.raises(TaskError) as info:
        load_task(write_task(tmp_path / "t", frontmatter, body))
    return str(info.value)


def test_defaults_follow_the_reference():
    cfg = TaskConfig()
    assert cfg.schema_version == "1.3"
    assert cfg.verifier.timeout_sec == 600.0 and cfg.verifier.type == "test-script"
    assert cfg.verifier.service == "main" and cfg.verifier.judge.rubric_path == "tests/rubric.toml"
    assert (cfg.sandbox.network_mode, cfg.sandbox.cpus, cfg.sandbox.memory_mb) == ("public", 1, 2048)
    assert (cfg.sandbox.storage_mb, cfg.sandbox.build_timeout_sec) == (10240, 600.0)
    assert cfg.agent.timeout_sec is None and cfg.oracle.env == {}


def test_unknown_key_has_a_did_you_mean(tmp_path):
    assert load_error(tmp_path, "agnet: {timeout_sec: 5}\n").startswith(
        "task.md: unknown key 'agnet' (did you mean 'agent'?)")


def test_nested_unknown_key_names_the_dotted_path(tmp_path):
    message = load_error(tmp_path, "sandbox: {cpu: 2}\n")
    assert "unknown key 'sandbox.cpu' (did you mean 'cpus'?)" in message


def test_environment_in_task_md_gets_a_rename_hint(tmp_path):
    message = load_error(tmp_path, "environment: {cpus: 2}\n")
    assert "rename it to 'sandbox:'" in message


@pytest.mark.parametrize("key", ["agent.timeout_sec", "verifier.timeout_sec", "oracle.timeout_sec",
                                 "sandbox.build_timeout_sec"])
@pytest.mark.parametrize("value", ["-5", "0"])
def test_non_positive_timeouts_are_refused(tmp_path, key, value):
    block, field = key.split(".")
    message = load_error(tmp_path, f"{block}: {{{field}: {value}}}\n")
    assert f"'{key}'" in message and "positive number of seconds" in message


def test_bad_reward_range(tmp_path):
    assert "may only widen [0, 1]" in load_error(tmp_path, "verifier: {reward_range: [0.2, 1]}\n")
    cfg = TaskConfig.model_validate({"verifier": {"reward_range": [-1, 1]}})
    assert cfg.verifier.reward_range == (-1.0, 1.0)


def test_allowlist_needs_hosts(tmp_path):
    assert "needs a non-empty allowed_hosts" in load_error(tmp_path, "sandbox: {network_mode: allowlist}\n")
    assert "bare lowercase hostname" in load_error(
        tmp_path, "sandbox: {network_mode: allowlist, allowed_hosts: ['https://pypi.org']}\n")


def test_oracle_and_solution_together_is_an_error():
    with pytest.raises(Exception, match="keep only 'oracle'"):
        TaskConfig.model_validate({"oracle": {}, "solution": {}})


def test_solution_alias_and_env_folding():
    cfg = TaskConfig.model_validate({"solution": {"API_TOKEN": "x", "env": {"B": "2"}}})
    assert cfg.oracle.env == {"API_TOKEN": "x", "B": "2"}


def test_version_becomes_schema_version_and_major_2_is_refused():
    assert TaskConfig.model_validate({"version": "1.0"}).schema_version == "1.0"
    with pytest.raises(Exception, match="major version 1"):
        TaskConfig.model_validate({"schema_version": "2.0"})


def test_deprecated_sandbox_spellings():
    cfg = TaskConfig.model_validate({"sandbox": {"allow_internet": False, "memory": "1G", "storage": "512M"}})
    assert (cfg.sandbox.network_mode, cfg.sandbox.memory_mb, cfg.sandbox.storage_mb) == ("no-network", 1024, 512)
    with pytest.raises(Exception, match="contradicts"):
        TaskConfig.model_validate({"sandbox": {"allow_internet": False, "network_mode": "public"}})


def test_workdir_must_be_absolute_and_not_root():
    for bad in ("app", "/"):
        with pytest.raises(Exception, match="workdir"):
            TaskConfig.model_validate({"sandbox": {"workdir": bad}})


def test_profiles_merge_under_the_author():
    doc = normalize_frontmatter({"profile": "code-change", "sandbox": {"cpus": 2}})
    assert doc["sandbox"]["cpus"] == 2 and doc["sandbox"]["memory_mb"] == 8192
    assert doc["agent"] == {"timeout_sec": 7200.0, "network_mode": "no-network"}
    assert doc["verifier"]["user"] == "root" and doc["sandbox"]["workdir"] == "/repo"
    assert doc["benchflow"]["authoring"] == {"profiles": ["code-change"], "normalized": True}
    assert "profile" not in doc
    TaskConfig.model_validate({k: v for k, v in doc.items() if k != "benchflow"})


def test_every_profile_yields_a_valid_config():
    from benchflow.tasks import PROFILES

    for name in PROFILES:
        doc = normalize_frontmatter({"profiles": [name]})
        TaskConfig.model_validate({k: v for k, v in doc.items() if k not in ("benchflow",)})


def test_unknown_profile_is_refused():
    with pytest.raises(TaskError, match="unknown profile 'code-chnage' \\(did you mean 'code-change'\\?\\)"):
        normalize_frontmatter({"profile": "code-chnage"})


def test_shorthands():
    doc = normalize_frontmatter({"name": "hello", "image": "python:3.12", "verifier": "checks",
                                 "oracle": "ref/"})
    assert doc["task"] == {"name": "benchflow/hello"}
    assert doc["sandbox"] == {"docker_image": "python:3.12"}
    assert doc["benchflow"]["verifier"] == {"path": "checks/", "spec": "checks/verifier.md",
                                            "entrypoint": "checks/test.sh"}
    assert doc["benchflow"]["oracle"] == {"path": "ref/"}
    assert normalize_frontmatter({"name": "org/x"})["task"]["name"] == "org/x"
    with pytest.raises(TaskError, match="inside the task"):
        normalize_frontmatter({"verifier": "../elsewhere"})


def test_load_native_example():
    task = load_task(EXAMPLE)
    assert task.layout == "task-md" and task.name == "hello-world"
    assert task.instruction.startswith("Create a file called `hello.txt`")
    assert task.config.verifier.timeout_sec == 30.0
    assert task.paths.verifier_dir.name == "verifier" and task.paths.instruction_file is None
    assert task.paths.dockerfile.is_file() and not task.paths.is_legacy
    assert task.digest().startswith("sha256:")


def test_roles_scenes_and_sidecars(tmp_path):
    root = write_task(tmp_path / "t", "agents:\n  roles:\n    coder: {agent: claude-agent-acp}\n"
                      "    reviewer: {agent: codex-acp}\nscenes:\n  - name: main\n    turns: [coder, reviewer]\n",
                      "## prompt\nBuild it.\n## role:coder\nYou code.\n## role:reviewer\nYou review.\n")
    (root / "prompts").mkdir()
    (root / "prompts" / "role.reviewer.md").write_text("Review carefully.\n")
    (root / "prompts" / "user-persona.md").write_text("Impatient.\n")
    task = load_task(root)
    assert task.roles["coder"]["prompt"] == "You code."
    assert task.roles["reviewer"]["prompt"] == "Review carefully."
    assert task.scenes[0]["roles"] == ["coder", "reviewer"]
    assert task.user_persona == "Impatient."


def test_scene_turn_with_undeclared_role(tmp_path):
    message = load_error(tmp_path, "agents:\n  roles:\n    a: {agent: x}\nscenes:\n  - turns: [b]\n")
    assert "names role 'b'" in message


def test_empty_prompt(tmp_path):
    assert "prompt is empty" in load_error(tmp_path, "agent: {timeout_sec: 5}\n", "\n")


def test_legacy_fixture_loads_with_renames():
    task = load_task(FIXTURES / "legacy-hello")
    assert task.layout == "task-toml" and task.paths.is_legacy
    assert task.config.schema_version == "1.0"
    assert task.config.sandbox.memory_mb == 1024 and task.config.sandbox.network_mode == "no-network"
    assert task.paths.verifier_dir.name == "tests" and task.paths.oracle_dir.name == "solution"
    assert task.instruction.startswith("Create a file called `hello.txt`")


def test_legacy_unknown_keys_go_to_the_compat_envelope(tmp_path):
    (tmp_path / "task.toml").write_text('version = "1.0"\nlegacy_flag = 1\n[environment]\ncpus = 2\n'
                                        '[environment.modal]\nimage = "x"\n')
    config, warnings = load_legacy_config(tmp_path)
    assert config.sandbox.cpus == 2
    assert any("sandbox.modal" in w for w in warnings) and any("legacy_flag" in w for w in warnings)
    legacy = read_legacy(tmp_path)
    assert legacy.compat["status"] == "preserved-extra"
    assert sorted(legacy.compat["extra_paths"]) == ["legacy_flag", "sandbox.modal"]
    assert legacy.compat["extra"] == {"legacy_flag": 1, "sandbox": {"modal": {"image": "x"}}}
    assert "modal" not in legacy.declared["sandbox"]


def test_legacy_both_spellings_is_an_error(tmp_path):
    (tmp_path / "task.toml").write_text("[environment]\ncpus = 1\n[sandbox]\ncpus = 2\n")
    with pytest.raises(TaskError, match="keep only 'sandbox'"):
        load_legacy_config(tmp_path)


def test_legacy_value_errors_still_fail(tmp_path):
    (tmp_path / "task.toml").write_text("[verifier]\ntimeout_sec = -1\n")
    with pytest.raises(TaskError, match="task.toml: 'verifier.timeout_sec'"):
        load_legacy_config(tmp_path)


def test_legacy_toml_syntax_error(tmp_path):
    (tmp_path / "task.toml").write_text("[agent\ntimeout_sec = 1\n")
    with pytest.raises(TaskError, match="task.toml: TOML error: .*line 1"):
        load_legacy_config(tmp_path)


def test_not_a_task_folder(tmp_path):
    with pytest.raises(TaskError, match="not a task folder"):
        load_task(tmp_path)


@pytest.mark.parametrize("profiles", [["code-change"], ["multi-agent", "leaderboard-local"],
                                      ["harbor-compatible", "reward-kit", "acceptance-live"]])
def test_normalize_is_idempotent(profiles):
    once = normalize_frontmatter({"profiles": profiles, "name": "x", "image": "debian:bookworm-slim"})
    assert normalize_frontmatter(once) == once


def test_verifier_shorthand_moves_the_verifier_dir(tmp_path):
    root = write_task(tmp_path / "t", "verifier: checks/\noracle: reference\n")
    task = load_task(root)
    assert task.paths.verifier_dir == root / "checks"
    assert task.paths.solve_path == root / "reference" / "solve.sh"
    assert task.config.verifier.timeout_sec == 600.0


def test_legacy_environment_image_beside_a_dockerfile_is_kept_aside_and_the_dockerfile_built(tmp_path):
    """SkillsBench's ``[environment] image = "python:3.12-slim"`` is a note Harbor ignores: it builds
    ``environment/Dockerfile``; read as ``docker_image`` it ran a bare image without the task's files."""
    (tmp_path / "task.toml").write_text('version = "1.0"\n[environment]\nimage = "python:3.12-slim"\ncpus = 1\n')
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM python:3.12.8-slim\nWORKDIR /app\n")
    legacy = read_legacy(tmp_path)
    assert legacy.config.sandbox.docker_image is None
    assert legacy.compat["extra"] == {"sandbox": {"image": "python:3.12-slim"}}
    assert any("environment/Dockerfile is built" in w for w in legacy.warnings)


def test_legacy_environment_image_without_a_dockerfile_is_the_image_to_run(tmp_path):
    (tmp_path / "task.toml").write_text('version = "1.0"\n[environment]\nimage = "python:3.12-slim"\n')
    assert read_legacy(tmp_path).config.sandbox.docker_image == "python:3.12-slim"


def test_a_harbor_version_before_1_is_read_as_1_with_a_warning(tmp_path):
    """SkillsBench's jax-computing-basics says ``version = "0.0"``; Harbor runs it, so bench does too."""
    task = tmp_path / "v0"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (task / "instruction.md").write_text("Do it.\n")
    (task / "task.toml").write_text('version = "0.0"\n')
    loaded = load_task(task)
    assert loaded.config.schema_version == "1.0"
    assert any("version '0.0' is read as 1.0" in w for w in loaded.warnings)
