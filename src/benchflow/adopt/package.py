"""The benchmark slug and the scaffold of ``benchmarks/<name>/`` (``bench eval adopt --scaffold-only``).

The package is what a conversion fills in (the file set of BenchFlow's adopted benchmarks):

``benchflow.py``            the converter: source instances -> task folders
``main.py``                 its command line (``python benchmarks/<name>/main.py --output-dir …``)
``parity_test.py``          structural / eval / side-by-side parity; ``--mode side-by-side`` prints the
                            parity_experiment.json document the gate scores (``--rerun``)
``parity_experiment.json``  the recorded evidence, empty (``"status": "template"``) until measured
``run_<module>.py``         convert, then run the tasks through ``bf.run`` with ``<name>.yaml``
``<name>.yaml``             the run config (``bench run --config``)
``benchmark.yaml``          the descriptor: source, conversion, verification, parity counts
``README.md``, ``__init__.py``

The folder is built beside its target and renamed into place, so an interrupted scaffold leaves
nothing behind; an existing benchmark is never overwritten.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from benchflow.errors import UserError
from benchflow.util import atomic

DEFAULT_BENCHMARKS_DIR = Path("benchmarks")
"""``--benchmarks-dir`` when not given: ``benchmarks/`` of the current folder."""

_SLUG = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
MAX_SLUG_LEN = 64
TEMPLATES = {
    "benchflow.py": "converter.py.tmpl",
    "main.py": "main.py.tmpl",
    "parity_test.py": "parity_test.py.tmpl",
    "parity_experiment.json": "parity_experiment.json.tmpl",
    "run_{{MODULE}}.py": "runner.py.tmpl",
    "{{NAME}}.yaml": "job.yaml.tmpl",
    "benchmark.yaml": "benchmark.yaml.tmpl",
    "README.md": "README.md.tmpl",
}
"""Package file (name tokens filled in) -> its template in ``scaffold/``."""


@dataclass(frozen=True)
class ScaffoldResult:
    """What :func:`scaffold_benchmark` wrote."""

    path: Path
    files: list[str] = field(default_factory=list)
    """Relative paths, sorted."""


def validate_slug(slug: str) -> str:
    """``slug`` when it is a benchmark slug: lowercase letters and digits in single-hyphen words,
    starting with a letter, at most 64 characters (so it never leads out of ``benchmarks/``).

    Raises:
        UserError: naming the slug and the fix.
    """
    fix = "use a lowercase slug such as 'my-bench' (letters and digits, single hyphens, a letter first)"
    if not slug:
        raise UserError(f"benchmark name is empty; {fix}")
    if len(slug) > MAX_SLUG_LEN:
        raise UserError(f"benchmark name {slug!r} is longer than {MAX_SLUG_LEN} characters; {fix}")
    if not _SLUG.fullmatch(slug):
        raise UserError(f"benchmark name {slug!r} is not a slug; {fix}")
    return slug


def slug_from_source(source: str) -> str:
    """The slug of a source repository or path: its last segment, lowercased, ``.git`` dropped, runs of
    other characters made one hyphen (``github.com/org/SWE_Bench.git`` -> ``swe-bench``).

    Raises:
        UserError: nothing slug-like is left; the message says to pass ``--name``.
    """
    base = source.rstrip("/").rsplit("/", 1)[-1]
    base = base[:-4] if base.endswith(".git") else base
    slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")
    try:
        return validate_slug(slug)
    except UserError:
        raise UserError(f"cannot make a benchmark name of {source!r} (got {slug!r}); pass --name SLUG") from None


def benchmark_dir(benchmarks_dir: Path | None, slug: str) -> Path:
    """``<benchmarks_dir>/<slug>`` (``./benchmarks`` when None), the slug validated."""
    return (benchmarks_dir or DEFAULT_BENCHMARKS_DIR) / validate_slug(slug)


def render_files(slug: str) -> dict[str, str]:
    """``{relative path: content}`` of the package of ``slug`` (no I/O but reading the templates)."""
    slug = validate_slug(slug)
    tokens = {"{{NAME}}": slug, "{{TITLE}}": " ".join(w.capitalize() for w in slug.split("-")),
              "{{MODULE}}": slug.replace("-", "_")}

    def fill(text: str) -> str:
        for token, value in tokens.items():
            text = text.replace(token, value)
        return text

    folder = resources.files("benchflow.adopt") / "scaffold"
    files = {"__init__.py": ""}
    for target, template in TEMPLATES.items():
        files[fill(target)] = fill(folder.joinpath(template).read_text(encoding="utf-8"))
    return files


def scaffold_benchmark(benchmarks_dir: Path | None, slug: str) -> ScaffoldResult:
    """Write ``<benchmarks_dir>/<slug>/`` from the templates.

    Raises:
        UserError: a bad slug, an existing benchmark (never overwritten), or a folder that cannot be written.
    """
    target = benchmark_dir(benchmarks_dir, slug)
    if target.exists():
        raise UserError(f"{target}: already exists; refusing to overwrite it (pick another --name, or "
                        "remove the folder)")
    files = render_files(slug)
    try:
        staging = atomic.staging_folder(target, ".scaffold")
    except OSError as exc:
        raise UserError(f"{target.parent}: cannot be written ({exc.strerror}); pick a --benchmarks-dir you "
                        "can write to") from None
    try:
        for rel, text in files.items():
            atomic.write_text(staging / rel, text)
        staging.chmod(0o755)
        staging.rename(target)  # fails on a non-empty folder made meanwhile: nothing is replaced
    except OSError as exc:
        raise UserError(f"{target}: cannot be written ({exc.strerror}); pick a --benchmarks-dir you can "
                        "write to") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ScaffoldResult(path=target, files=sorted(files))
