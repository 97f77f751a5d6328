"""``bench train run sft --publish-model / --publish-artifacts``: the trained model and the run's record on a Hub.

After a training run that exited 0 (never after ``--dry-run`` or a failure):

- ``--publish-model REPO`` uploads the trainer's output dir to a model repo, under
  ``--model-tag`` when given, as one commit; ``--model-card auto`` adds a
  ``README.md`` naming the base model, the data's SHA-256 and the run's settings.
- ``--publish-artifacts REPO`` uploads BenchFlow's ``train-run.json`` (and the
  staged data, when the run changed the rows) to a dataset repo under
  ``[<hf-prefix>/]<work dir name>/``.
- ``--hf-public-read-check`` reads each upload back without a token.

The flags are checked before the trainer starts (:func:`check`); the token comes
only from ``HF_TOKEN``. What was published is recorded in ``train-run.json``'s
``published`` block; a failure is reported there and on stderr, and the run's
exit code stays the trainer's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from benchflow.errors import ConfigError, UserError

CARD_MODES = ("auto",)


def check(publishing: dict[str, Any]) -> dict[str, Any]:
    """The checked flags (``model``, ``tag``, ``card``, ``artifacts``, ``prefix``, ``read_check``), or {}.

    Raises:
        UserError / ConfigError: a flag without the one it needs, a bad repo id or path, no HF_TOKEN (exit 2).
    """
    from benchflow.hf import client

    model, tag, card = publishing.get("--publish-model"), publishing.get("--model-tag"), publishing.get("--model-card")
    artifacts, prefix = publishing.get("--publish-artifacts"), publishing.get("--hf-prefix")
    read_check = bool(publishing.get("--hf-public-read-check"))
    for flag, value, needs in (("--model-tag", tag, model), ("--model-card", card, model),
                               ("--hf-prefix", prefix, artifacts)):
        if value and not needs:
            raise UserError(f"{flag}: needs {'--publish-model' if flag != '--hf-prefix' else '--publish-artifacts'}")
    if read_check and not (model or artifacts):
        raise UserError("--hf-public-read-check: needs --publish-model or --publish-artifacts")
    if not (model or artifacts):
        return {}
    if card is not None and card not in CARD_MODES:
        raise UserError(f"--model-card {card!r}: use auto")
    for flag, repo in (("--publish-model", model), ("--publish-artifacts", artifacts)):
        if repo:
            client.check_repo_id(repo, flag)
    for flag, path in (("--model-tag", tag), ("--hf-prefix", prefix)):
        if path and (".." in PurePosixPath(path.strip("/")).parts or not path.strip("/")):
            raise UserError(f"{flag} {path!r}: must be a folder path inside the repo, e.g. runs/2026")
    if client.token() is False:
        raise ConfigError("--publish-model/--publish-artifacts: set HF_TOKEN in the environment to a token with "
                          "write access (it is read only from there, never from a flag)")
    return {"model": model, "tag": (tag or "").strip("/"), "card": card, "artifacts": artifacts,
            "prefix": (prefix or "").strip("/"), "read_check": read_check}


def _card(manifest: dict[str, Any], config: dict[str, Any]) -> str:
    base = (config.get("model") or {}).get("name") if isinstance(config.get("model"), dict) else None
    lines = ["---", "library_name: transformers", "tags: [benchflow, sft, prime-rl]"]
    if base:
        lines.append(f"base_model: {base}")
    lines += ["---", "", "# Trained with BenchFlow (`bench train run sft`, Prime-RL)", ""]
    lines += [f"- base model: `{base or 'see the config'}`", f"- data: `{manifest.get('data')}`",
              f"- data sha256: `{manifest.get('data_sha256')}`", f"- config sha256: `{manifest.get('config_sha256')}`",
              "- settings:", *(f"  - `{k}` = `{v}`" for k, v in sorted((manifest.get("settings") or {}).items())
                               if k != "output_dir")]
    return "\n".join(lines) + "\n"


def _read_back(repo: str, repo_type: str, path: str) -> bool:
    from huggingface_hub import hf_hub_download

    from benchflow.hf import client

    with tempfile.TemporaryDirectory(prefix="benchflow-readcheck-") as tmp:
        try:
            hf_hub_download(repo, path, repo_type=repo_type, endpoint=client.endpoint(), token=False, cache_dir=tmp)
        except Exception:  # noqa: BLE001 - any failure means "not publicly readable"
            return False
    return True


def publish(checked: dict[str, Any], manifest: dict[str, Any], manifest_path: Path, output_dir: Path,
            config: dict[str, Any]) -> dict[str, Any]:
    """Upload what ``checked`` asks for; returns the ``published`` block (with ``error`` on a failure)."""
    from benchflow.hf import client

    done: dict[str, Any] = {}
    try:
        api = client.api()
        if checked.get("model"):
            if not output_dir.is_dir() or not any(output_dir.iterdir()):
                raise UserError(f"--publish-model: the trainer's output dir {output_dir} is empty; nothing to upload")
            repo, tag = checked["model"], checked["tag"]
            with client.hub_errors(f"--publish-model {repo}"):
                api.create_repo(repo, repo_type="model", exist_ok=True)
                info = api.upload_folder(repo_id=repo, repo_type="model", folder_path=str(output_dir),
                                         path_in_repo=tag or None, commit_message="BenchFlow SFT run: model")
                if checked.get("card") == "auto":
                    api.upload_file(repo_id=repo, repo_type="model", path_or_fileobj=_card(manifest, config).encode(),
                                    path_in_repo=f"{tag}/README.md" if tag else "README.md",
                                    commit_message="BenchFlow SFT run: model card")
            done["model"] = {"repo": repo, "path": tag, "commit_url": getattr(info, "commit_url", None)}
        if checked.get("artifacts"):
            repo = checked["artifacts"]
            base = "/".join(p for p in (checked["prefix"], manifest_path.parent.name) if p)
            with client.hub_errors(f"--publish-artifacts {repo}"):
                api.create_repo(repo, repo_type="dataset", exist_ok=True)
                api.upload_file(repo_id=repo, repo_type="dataset", path_or_fileobj=str(manifest_path),
                                path_in_repo=f"{base}/train-run.json", commit_message="BenchFlow SFT run: record")
                staged = manifest_path.parent / "data" / "train.jsonl"
                if staged.is_file():
                    api.upload_file(repo_id=repo, repo_type="dataset", path_or_fileobj=str(staged),
                                    path_in_repo=f"{base}/data/train.jsonl", commit_message="BenchFlow SFT run: data")
            done["artifacts"] = {"repo": repo, "path": base}
        if checked.get("read_check"):
            if "model" in done:
                first = next(p for p in sorted(output_dir.rglob("*")) if p.is_file()).relative_to(output_dir)
                done["model"]["public_read"] = _read_back(
                    done["model"]["repo"], "model", "/".join(p for p in (checked["tag"], first.as_posix()) if p))
            if "artifacts" in done:
                done["artifacts"]["public_read"] = _read_back(done["artifacts"]["repo"], "dataset",
                                                              f"{done['artifacts']['path']}/train-run.json")
    except Exception as exc:  # noqa: BLE001 - publishing never changes the training run's outcome
        done["error"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return done
