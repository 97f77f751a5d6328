"""``bench run --publish-hf REPO`` / ``--publish-bucket BUCKET``: a finished job's artifacts, redacted, on a
Hugging Face dataset repo and/or storage bucket.

What is uploaded is exactly what ``bench bundle --no-workspace`` would put in
its zip (every text file through the redactor, binaries holding a secret shape
left out, ``bundle.json`` listing it all), unpacked under
``[<hf-prefix>/]<job name>/`` in the repo, as one commit, and in the bucket
(``--publish-bucket``, one batch of the same files). With
``--eval-results-model/-dataset/-task`` a ``.eval_results/<job>.yaml`` entry
(the Hub's eval-results format: the job's solve rate on that benchmark task)
is proposed to the model repo as a pull request. ``--hf-public-read-check``
then reads the uploaded files back without a token.

Publishing runs after the job has finished and written its summary; it never
touches the job folder, and its failure is reported (:class:`PublishReport`
``error``) without changing the job.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from benchflow.errors import ConfigError
from benchflow.jobs.layout import JobPaths

from . import client


@dataclass(frozen=True)
class EvalResultsTarget:
    model: str
    dataset: str
    task: str


@dataclass(frozen=True)
class PublishRequest:
    """The run's publish flags, checked before the run starts (:func:`publish_request`)."""

    repo: str | None
    prefix: str = ""
    public_read_check: bool = False
    eval_results: EvalResultsTarget | None = None
    bucket: str | None = None
    """``--publish-bucket``: the same files into a Hugging Face storage bucket."""


@dataclass
class PublishReport:
    repo: str | None
    path_in_repo: str
    files: int = 0
    masked: int = 0
    left_out: int = 0
    commit_url: str | None = None
    public_read: bool | None = None
    eval_results_pr: str | None = None
    bucket: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def publish_request(repo: str | None, *, prefix: str | None = None, public_read_check: bool = False,
                    eval_model: str | None = None, eval_dataset: str | None = None,
                    eval_task: str | None = None, bucket: str | None = None) -> PublishRequest | None:
    """The checked request, or None when nothing is to be published.

    Raises:
        ConfigError: a flag without the ones it needs, a bad repo id or prefix, no HF_TOKEN (exit 2).
    """
    given = {"--eval-results-model": eval_model, "--eval-results-dataset": eval_dataset,
             "--eval-results-task": eval_task}
    if repo is None:
        needing = [flag for flag, value in given.items() if value] + (
            ["--hf-public-read-check"] if public_read_check else [])
        if needing:
            raise ConfigError(f"{needing[0]}: needs --publish-hf REPO (the dataset repo the artifacts go to)")
        if prefix and bucket is None:
            raise ConfigError("--hf-prefix: needs --publish-hf REPO or --publish-bucket BUCKET")
        if bucket is None:
            return None
    else:
        client.check_repo_id(repo, "--publish-hf")
    if bucket is not None:
        client.check_repo_id(bucket, "--publish-bucket")
    eval_target = None
    if any(given.values()):
        missing = [flag for flag, value in given.items() if not value]
        if missing:
            raise ConfigError(f"{missing[0]}: the eval-results entry needs all of --eval-results-model, "
                              "--eval-results-dataset and --eval-results-task")
        client.check_repo_id(eval_model or "", "--eval-results-model")
        client.check_repo_id(eval_dataset or "", "--eval-results-dataset")
        eval_target = EvalResultsTarget(eval_model or "", eval_dataset or "", eval_task or "")
    clean = PurePosixPath((prefix or "").strip("/"))
    if prefix and (".." in clean.parts or clean.as_posix() == "."):
        raise ConfigError(f"--hf-prefix {prefix!r}: must be a folder path inside the repo, e.g. runs/2026")
    if client.token() is False:
        raise ConfigError(f"{'--publish-hf' if repo else '--publish-bucket'}: set HF_TOKEN in the environment to a token with write access "
                          "(it is read only from there, never from a flag)")
    return PublishRequest(repo=repo, prefix="" if not prefix else clean.as_posix(),
                          public_read_check=public_read_check, eval_results=eval_target, bucket=bucket)


def publish_job(job_dir: str | Path, request: PublishRequest) -> PublishReport:
    """Upload the job's redacted artifacts; every failure ends up in ``report.error``, never raised."""
    job = Path(job_dir)
    base = f"{request.prefix}/{job.name}" if request.prefix else job.name
    report = PublishReport(repo=request.repo, path_in_repo=base, bucket=request.bucket)
    try:
        with tempfile.TemporaryDirectory(prefix="benchflow-publish-") as tmp:
            folder = _stage(job, Path(tmp), report)
            if request.repo is not None:
                _upload(job, folder, request, report)
            if request.bucket is not None:
                _upload_bucket(folder, request, report)
        if request.eval_results is not None:
            report.eval_results_pr = _propose_eval_results(job, request, report)
        if request.public_read_check:
            _check_public_read(request, report)
    except Exception as exc:  # noqa: BLE001 - publishing must never lose the job; the reason is reported
        report.error = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return report


def _stage(job: Path, tmp: Path, report: PublishReport) -> Path:
    """The redacted files of ``bench bundle --no-workspace``, unpacked under ``tmp/upload``."""
    from benchflow.results.bundle import bundle

    zip_path = tmp / "bundle.zip"
    manifest = bundle(job, zip_path, workspace=False)
    report.masked, report.left_out = manifest.masked_total, len(manifest.left_out)
    folder = tmp / "upload"
    with zipfile.ZipFile(zip_path) as archive:
        for member in archive.infolist():
            rel = PurePosixPath(member.filename)
            if member.is_dir() or rel.is_absolute() or ".." in rel.parts or len(rel.parts) < 2:
                continue
            target = folder.joinpath(*rel.parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(member))
            report.files += 1
    return folder


def _upload(job: Path, folder: Path, request: PublishRequest, report: PublishReport) -> None:
    api = client.api()
    with client.hub_errors(f"--publish-hf {request.repo}"):
        api.create_repo(request.repo, repo_type="dataset", exist_ok=True)
        info = api.upload_folder(repo_id=request.repo, repo_type="dataset", folder_path=str(folder),
                                 path_in_repo=report.path_in_repo,
                                 commit_message=f"BenchFlow job {job.name}: redacted artifacts")
    report.commit_url = getattr(info, "commit_url", None) or str(info)


def _upload_bucket(folder: Path, request: PublishRequest, report: PublishReport) -> None:
    """The same files into a storage bucket (the library sends them through the Hub's Xet storage)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    api = client.api()
    with client.hub_errors(f"--publish-bucket {request.bucket}"):
        api.create_bucket(request.bucket, exist_ok=True)
        api.batch_bucket_files(request.bucket, add=[
            (str(path), f"{report.path_in_repo}/{path.relative_to(folder).as_posix()}") for path in files])


def _propose_eval_results(job: Path, request: PublishRequest, report: PublishReport) -> str | None:
    import yaml
    from huggingface_hub import CommitOperationAdd, EvalResultEntry
    from huggingface_hub._eval_results import eval_result_entries_to_yaml

    target = request.eval_results
    assert target is not None
    summary = json.loads(JobPaths(job).summary.read_text())
    value = summary.get("score_ratio")
    if value is None:
        value = summary.get("mean_reward")
    if value is None:
        raise ConfigError(f"{job}/summary.json: no score_ratio or mean_reward to report as an eval result")
    agent, model = summary.get("agent"), summary.get("model")
    entry = EvalResultEntry(
        dataset_id=target.dataset, task_id=target.task, value=round(float(value), 6),
        source_url=f"{client.endpoint()}/datasets/{request.repo}/tree/main/{report.path_in_repo}",
        source_name="BenchFlow run artifacts",
        notes=", ".join(f"{k}={v}" for k, v in (("agent", agent), ("model", model)) if v) or None)
    text = yaml.safe_dump(eval_result_entries_to_yaml([entry]), sort_keys=False)
    api = client.api()
    with client.hub_errors(f"--eval-results-model {target.model}"):
        info = api.create_commit(
            repo_id=target.model, repo_type="model", create_pr=True,
            operations=[CommitOperationAdd(path_in_repo=f".eval_results/benchflow-{job.name}.yaml",
                                           path_or_fileobj=text.encode())],
            commit_message=f"Add {target.dataset} {target.task} eval result (BenchFlow job {job.name})")
    return getattr(info, "pr_url", None)


def _check_public_read(request: PublishRequest, report: PublishReport) -> None:
    """Read the uploaded bundle.json back with no token; a refusal is the report's error."""
    from huggingface_hub import hf_hub_download

    with tempfile.TemporaryDirectory(prefix="benchflow-readcheck-") as tmp:
        try:
            hf_hub_download(request.repo, f"{report.path_in_repo}/bundle.json", repo_type="dataset",
                            endpoint=client.endpoint(), token=False, cache_dir=tmp)
        except Exception as exc:  # noqa: BLE001 - any failure means "not publicly readable"
            report.public_read = False
            status = getattr(getattr(exc, "response", None), "status_code", None)
            raise ConfigError(f"--hf-public-read-check: {request.repo} is not readable without a token"
                              f"{f' (the Hub answered {status})' if status else ''}; make the dataset public "
                              "or drop the flag") from None
    report.public_read = True
