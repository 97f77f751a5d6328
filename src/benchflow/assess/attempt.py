"""Saved-attempt references: what ``bench assess attempt-ref`` hashes and ``create`` freezes.

A reference names one completed rollout's task, the output to compare (a
folder or one file) and the file a reviewer sees, each with its SHA-256, and
every runtime (sandbox) the attempt used, so ``release`` can require proof
that each one is gone. From ``result.json`` only the task's identity and the
sandbox id are read; rewards never are.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path
from typing import Any

from benchflow.assess import AssessmentError
from benchflow.assess.digest import hash_path, sha256_json

SCHEMA = "benchflow.assessment-attempt-ref.v1"
ROLES = ("solver", "verifier", "shared")


def parse_runtime(text: str) -> dict[str, str]:
    """``PROVIDER:RUNTIME_ID[:ROLE]`` → ``{provider, runtime_id, role}`` (role defaults to solver)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise AssessmentError(f"--runtime {text!r}: expected PROVIDER:RUNTIME_ID[:ROLE], e.g. docker:3f2a9c:verifier")
    role = parts[2] if len(parts) == 3 else "solver"
    _check_role(role, "--runtime")
    return {"provider": parts[0], "runtime_id": parts[1], "role": role}


def _check_role(role: str, flag: str) -> None:
    if role not in ROLES:
        raise AssessmentError(f"{flag}: role {role!r} is not one of {', '.join(ROLES)}")


def _hashed(path: Path, flag: str) -> dict[str, Any]:
    if not path.exists() and not path.is_symlink():
        raise AssessmentError(f"{flag} {path}: no such file or folder")
    try:
        return {"path": str(path.resolve()), **hash_path(path)}
    except (OSError, ValueError) as exc:
        raise AssessmentError(f"{flag} {path}: cannot be hashed ({exc})") from exc


def make_attempt_ref(rollout: Path, *, output: Path, review_artifact: Path, sandbox_provider: str | None,
                     sandbox_role: str, runtimes: list[str], media_type: str | None) -> dict[str, Any]:
    """The reference of one completed rollout (a folder holding ``result.json``)."""
    result_file = rollout / "result.json"
    if not result_file.is_file():
        raise AssessmentError(f"{rollout}: not a completed rollout (no result.json); give a trial folder "
                              "whose run finished")
    try:
        result = json.loads(result_file.read_text(encoding="utf-8"))
        task_name = result["task_name"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AssessmentError(f"{result_file}: unreadable or without task_name ({exc})") from exc
    _check_role(sandbox_role, "--sandbox-role")
    found: list[dict[str, str]] = []
    sandbox_id = result.get("sandbox_id")
    provider = sandbox_provider or result.get("environment")
    if sandbox_id:
        if not provider:
            raise AssessmentError(f"{result_file}: sandbox_id has no recorded backend; give --sandbox-provider")
        found.append({"provider": str(provider), "runtime_id": str(sandbox_id), "role": sandbox_role})
    found.extend(parse_runtime(text) for text in runtimes)
    if not found:
        raise AssessmentError(f"{result_file}: no sandbox_id recorded; name the attempt's runtimes with "
                              "--runtime PROVIDER:RUNTIME_ID[:ROLE]")
    keys = [(r["provider"], r["runtime_id"]) for r in found]
    if len(set(keys)) != len(keys):
        raise AssessmentError("--runtime: the same runtime is named twice")
    artifact = _hashed(review_artifact, "--review-artifact")
    if artifact["kind"] != "file":
        raise AssessmentError(f"--review-artifact {review_artifact}: must be one file (the one a reviewer sees)")
    artifact["media_type"] = media_type or mimetypes.guess_type(review_artifact.name)[0] or "application/octet-stream"
    return {
        "schema": SCHEMA,
        "rollout": str(rollout.resolve()),
        "trial_name": result.get("trial_name") or result.get("rollout_name") or rollout.name,
        "task": {"name": task_name, "digest": result.get("task_digest")},
        "agent": result.get("agent"),
        "model": result.get("model"),
        "output": _hashed(output, "--output"),
        "review_artifact": artifact,
        "runtimes": found,
    }


def load_attempt_ref(path: Path) -> dict[str, Any]:
    """A reference file, checked for shape (not re-hashed: see :func:`stale_parts`)."""
    try:
        ref = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AssessmentError(f"--attempt {path}: not a readable JSON file ({exc})") from exc
    if not isinstance(ref, dict) or ref.get("schema") != SCHEMA:
        raise AssessmentError(f"--attempt {path}: schema is not {SCHEMA}; make it with bench assess attempt-ref")
    problem = _shape_problem(ref)
    if problem:
        raise AssessmentError(f"--attempt {path}: {problem}; make it again with bench assess attempt-ref")
    return ref


def _shape_problem(ref: dict[str, Any]) -> str | None:
    """What is wrong with a reference's shape (a hand-edited or foreign file), or None."""
    if not isinstance(ref.get("rollout"), str):
        return "field 'rollout' must be a path"
    if not isinstance(ref.get("task"), dict) or not isinstance(ref["task"].get("name"), str):
        return "field 'task' must hold the task's name"
    for part in ("output", "review_artifact"):
        value = ref.get(part)
        if not isinstance(value, dict) or not all(isinstance(value.get(k), str) for k in ("path", "kind", "sha256")):
            return f"field {part!r} must hold path, kind and sha256"
    runtimes = ref.get("runtimes")
    if not isinstance(runtimes, list) or not runtimes or not all(
            isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("provider", "runtime_id", "role"))
            for r in runtimes):
        return "field 'runtimes' must list provider, runtime_id and role of each runtime"
    return None


def stale_parts(ref: dict[str, Any]) -> list[str]:
    """What no longer hashes as recorded (``output``, ``review_artifact``), with why."""
    stale = []
    for part in ("output", "review_artifact"):
        recorded = ref[part]
        path = Path(recorded["path"])
        try:
            now = hash_path(path)
        except (OSError, ValueError) as exc:
            stale.append(f"{part} {path}: {exc}")
            continue
        if now["sha256"] != recorded["sha256"] or now["kind"] != recorded["kind"]:
            stale.append(f"{part} {path}: sha256 {now['sha256'][:12]} != recorded {recorded['sha256'][:12]}")
    return stale


def ref_sha256(ref: dict[str, Any]) -> str:
    return sha256_json(ref)


def runtimes_named_by(path: Path) -> list[dict[str, str]]:
    """The runtimes a saved-attempt reference file names, or a trial folder's recorded sandbox."""
    if path.is_dir():
        result_file = path / "result.json"
        try:
            result = json.loads(result_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise AssessmentError(f"--release-proof {path}: not a completed trial folder ({exc})") from exc
        if not result.get("sandbox_id") or not result.get("environment"):
            raise AssessmentError(f"--release-proof {result_file}: no sandbox_id/environment recorded; give "
                                  "the attempt's reference (bench assess attempt-ref --runtime ...)")
        return [{"provider": result["environment"], "runtime_id": result["sandbox_id"], "role": "solver"}]
    try:
        ref = load_attempt_ref(path)
    except AssessmentError as exc:
        raise AssessmentError(str(exc).replace("--attempt", "--release-proof", 1)) from exc
    return list(ref["runtimes"])
