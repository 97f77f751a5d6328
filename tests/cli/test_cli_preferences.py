"""bench preferences pairs / import / rank as a user runs them: files written, refusals and exit codes."""

from __future__ import annotations

import json
import math
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_job

ARMS = {("a1", "m1"): 1700.0, ("a2", "m1"): 1550.0, ("a1", "m2"): 1450.0, ("a3", "m3"): 1300.0}
"""True Elo ratings (averaging 1500) of the synthetic arms."""


def one_line_error(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code and len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    return lines[0]


def _trial(task: str, agent: str, model: str, **kw) -> TrialSpec:
    return TrialSpec(task, agent=agent, model=model,
                     files={"artifacts/index.html": f"<h1>{task} by {agent} with {model}</h1>"}, **kw)


def _outputs(store: Path) -> dict[str, dict]:
    db = sqlite3.connect(store / "workspace.sqlite3")
    db.row_factory = sqlite3.Row
    return {r["output_id"]: dict(r) for r in db.execute("SELECT * FROM outputs")}


def _pairs(store: Path) -> list[dict]:
    db = sqlite3.connect(store / "workspace.sqlite3")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM pairs ORDER BY position")]


@pytest.fixture(scope="module")
def arms_job(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("prefjobs")
    # fixed folder names: the pairs, and so the drawn votes, are the same on every run
    return write_job(root, "arms", [_trial(t, a, m, suffix=f"{a}-{m}") for t in ("t1", "t2", "t3") for (a, m) in ARMS])


def _make(bench, job: Path, tmp: Path, *extra: str) -> Path:
    store = tmp / "store"
    proc = bench("preferences", "pairs", str(job), "--store", str(store), "--out", str(tmp / "pairs.jsonl"),
                 "--seed", "11", *extra)
    assert proc.returncode == 0, proc.stderr
    return store


def test_pairs_only_same_task_version_and_a_different_arm(bench, tmp_path):
    job = write_job(tmp_path, "mixed-job", [
        _trial("t1", "alpha-agent", "one-model"), _trial("t1", "beta-agent", "one-model"),
        _trial("t1", "alpha-agent", "one-model", suffix="again"),
        _trial("t1", "gamma-agent", "three-model", config={"task_digest": "sha256:t1-v2"},
               result={"task_digest": "sha256:t1-v2"}),
        _trial("t1", "delta-agent", "four-model", error="agent crashed"),
        TrialSpec("t1", agent="eps-agent", model="five-model"),  # no artifacts/ to compare
    ])
    store = _make(bench, job, tmp_path)
    outputs, pairs = _outputs(store), _pairs(store)
    assert len(pairs) == 2  # alpha (twice) against beta; never alpha with itself, never across versions
    for pair in pairs:
        left, right = outputs[pair["left_output"]], outputs[pair["right_output"]]
        assert left["task_version"] == right["task_version"] == pair["task_version"] == "sha256:t1-v1"
        assert (left["agent"], left["model"]) != (right["agent"], right["model"])
    assert {o["agent"] for o in outputs.values()} == {"alpha-agent", "beta-agent"}
    rows = (tmp_path / "pairs.jsonl").read_text()
    assert not any(name in rows for name in ("alpha", "beta", "one-model", "mixed-job"))
    for row in map(json.loads, rows.splitlines()):
        for side in ("left", "right"):
            assert (Path(row[side]["path"]) / "index.html").read_text().startswith("<h1>t1")
    meta = dict(sqlite3.connect(store / "workspace.sqlite3").execute("SELECT key, value FROM meta"))
    assert meta["seed"] == "11" and meta["output"] == "artifacts"


def test_pairs_seed_decides_sides_and_per_task_limits(bench, arms_job, tmp_path):
    def plan(sub: str, *extra: str) -> list[tuple[str, str, int]]:
        (tmp_path / sub).mkdir()
        store = _make(bench, arms_job, tmp_path / sub, *extra)
        outs = _outputs(store)
        return [(outs[p["left_output"]]["trial_path"], outs[p["right_output"]]["trial_path"], p["swapped"])
                for p in _pairs(store)]

    first, again = plan("a"), plan("b")
    assert first == again and len(first) == 18 and {s for *_, s in first} == {0, 1}
    kept = plan("c", "--keep-sides")
    assert {s for *_, s in kept} == {0}
    limited = plan("d", "--per-task", "2")
    assert len(limited) == 6


def test_pairs_refusals(bench, arms_job, tmp_path):
    assert "--golden" in one_line_error(bench("preferences", "pairs", str(arms_job), "--store", str(tmp_path / "s"),
                                              "--out", str(tmp_path / "p.jsonl"), "--golden", "maybe"))
    lonely = write_job(tmp_path, "lonely", [_trial("t1", "a1", "m1")])
    assert "nothing to pair" in one_line_error(bench("preferences", "pairs", str(lonely), "--store",
                                                     str(tmp_path / "s"), "--out", str(tmp_path / "p.jsonl")))
    assert not (tmp_path / "s").exists() and not (tmp_path / "p.jsonl").exists()
    (tmp_path / "bad.json").write_text('{"aspects": [{"id": "a b"}]}')
    assert "aspects[0].id" in one_line_error(bench("preferences", "pairs", str(arms_job), "--store",
                                                   str(tmp_path / "s"), "--out", str(tmp_path / "p.jsonl"),
                                                   "--rubric", str(tmp_path / "bad.json")))


def test_items_golden_as_side_or_bar(bench, arms_job, tmp_path):
    (tmp_path / "gold" / "site").mkdir(parents=True)
    (tmp_path / "gold" / "site" / "index.html").write_text("<h1>golden</h1>")
    (tmp_path / "gold" / "items.jsonl").write_text(json.dumps(
        {"task": "t1", "output": "site", "agent": "human", "condition": "golden", "golden": True}) + "\n")
    (tmp_path / "side").mkdir()
    store = _make(bench, arms_job, tmp_path / "side", "--items", str(tmp_path / "gold" / "items.jsonl"))
    goldens = [o for o in _outputs(store).values() if o["kind"] == "golden"]
    assert len(goldens) == 1 and goldens[0]["task_version"] == "sha256:t1-v1"
    assert len(_pairs(store)) == 18 + 4
    (tmp_path / "bar").mkdir()
    store = _make(bench, arms_job, tmp_path / "bar", "--items", str(tmp_path / "gold" / "items.jsonl"),
                  "--golden", "bar")
    assert len(_pairs(store)) == 18
    rows = [json.loads(line) for line in (tmp_path / "bar" / "pairs.jsonl").read_text().splitlines()]
    assert {"golden" in r for r in rows if r["task_id"] == "t1"} == {True}
    assert not any("golden" in r for r in rows if r["task_id"] != "t1")


def _elo_p(a: float, b: float) -> float:
    return 1 / (1 + 10 ** ((b - a) / 400))


def _votes(store: Path, raters: dict[str, str], repeats: int, rng: random.Random, tie: float = 0.1,
           contrarian: str | None = None) -> list[dict]:
    """Votes drawn from ARMS' Bradley-Terry model; ties keep each side's expected score unchanged."""
    outs = _outputs(store)
    rows = []
    for pair in _pairs(store):
        left, right = outs[pair["left_output"]], outs[pair["right_output"]]
        p = _elo_p(ARMS[(left["agent"], left["model"])], ARMS[(right["agent"], right["model"])])
        for rater, kind in raters.items():
            for n in range(repeats):
                if rng.random() < tie:
                    choice = "tie"
                else:
                    choice = "left" if rng.random() < (p - tie / 2) / (1 - tie) else "right"
                if rater == contrarian:
                    choice = "right" if p > 0.5 else "left"
                rows.append({"rater": rater, "rater_kind": kind, "pair_id": pair["pair_id"], "choice": choice,
                             "vote_id": f"v-{rater}-{pair['pair_id']}-{n}"})
    return rows


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rank_recovers_known_strengths_within_the_interval(bench, arms_job, tmp_path):
    store = _make(bench, arms_job, tmp_path)
    votes = _votes(store, {"r1": "person"}, 60, random.Random(5))
    assert bench("preferences", "import", str(store), "--votes", str(_write_jsonl(tmp_path / "v.jsonl", votes))
                 ).returncode == 0
    proc = bench("preferences", "rank", str(store), "--cluster", "vote", "--bootstrap", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads((store / "ratings.v1.json").read_text()) | {"created_at": doc["created_at"]}
    (table,) = doc["tables"]
    assert table["ties"] > 50 and table["cluster"] == "vote"
    ratings = {r["name"]: r for r in table["ratings"]}
    for (agent, model), true in ARMS.items():
        row = ratings[f"{agent}/{model}"]
        assert row["low"] <= true <= row["high"], (agent, model, row)
        assert row["high"] - row["low"] < 150
    assert [r["name"] for r in table["ratings"]] == ["a1/m1", "a2/m1", "a1/m2", "a3/m3"]
    assert math.isclose(sum(r["rating"] for r in table["ratings"]) / 4, 1500, abs_tol=0.5)


def test_rank_flags_a_rater_who_disagrees_with_everyone(bench, arms_job, tmp_path):
    store = _make(bench, arms_job, tmp_path)
    raters = {"ann": "person", "bob": "person", "cy": "person", "dee": "person", "eve": "person", "gus": "guest"}
    votes = _votes(store, raters, 1, random.Random(1), tie=0.0, contrarian="eve")
    # the agreeing raters answer as the model's favourite always, so they agree with each other
    for v in votes:
        if v["rater"] not in ("eve",):
            pair = next(p for p in _pairs(store) if p["pair_id"] == v["pair_id"])
            outs = _outputs(store)
            left, right = outs[pair["left_output"]], outs[pair["right_output"]]
            v["choice"] = "left" if ARMS[(left["agent"], left["model"])] > ARMS[(right["agent"], right["model"])] else "right"
    _write_jsonl(tmp_path / "v.jsonl", votes)
    assert bench("preferences", "import", str(store), "--votes", str(tmp_path / "v.jsonl")).returncode == 0
    proc = bench("preferences", "rank", str(store), "--min-agreement", "0.7", "--bootstrap", "20")
    assert proc.returncode == 0, proc.stderr
    assert "minimum 0.7 NOT met" in proc.stdout
    flagged = [line for line in proc.stdout.splitlines() if "below 0.7" in line]
    assert len(flagged) == 1 and "rater eve agrees 0.00" in flagged[0]
    doc = json.loads((store / "ratings.v1.json").read_text())
    assert [t["raters"] for t in doc["tables"]] == [["person"], ["guest"]]
    assert doc["tables"][0]["cluster"] == "rater+task"  # auto: several raters and several tasks
    together = json.loads(bench("preferences", "rank", str(store), "--raters", "person,guest", "--bootstrap", "0",
                                "--json").stdout)
    assert [t["raters"] for t in together["tables"]] == [["person", "guest"]]


def test_rank_waits_for_every_pair_unless_provisional(bench, arms_job, tmp_path):
    store = _make(bench, arms_job, tmp_path)
    one = _votes(store, {"ann": "person"}, 1, random.Random(2))[:3]
    _write_jsonl(tmp_path / "v.jsonl", one)
    assert bench("preferences", "import", str(store), "--votes", str(tmp_path / "v.jsonl")).returncode == 0
    assert "15 of 18 pairs" in one_line_error(bench("preferences", "rank", str(store)), code=1)
    assert not (store / "ratings.v1.json").exists()
    proc = bench("preferences", "rank", str(store), "--provisional", "--bootstrap", "0", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["provisional"] is True
    assert "--by" in one_line_error(bench("preferences", "rank", str(store), "--by", "colour"))


def test_import_checks_every_vote_first(bench, arms_job, tmp_path):
    (tmp_path / "rubric.json").write_text(json.dumps({"id": "web", "version": "1",
                                                      "aspects": [{"id": "layout", "min": 1, "max": 5}]}))
    store = _make(bench, arms_job, tmp_path, "--rubric", str(tmp_path / "rubric.json"))
    pairs = _pairs(store)
    good = [{"rater": "ann", "left": p["left_output"], "right": p["right_output"], "choice": "left",
             "scores": {"left": {"layout": 4}, "right": {"layout": 2}}} for p in pairs[:3]]
    bad = good + [{"rater": "ann", "left": pairs[0]["left_output"], "right": "o_nothere", "choice": "tie"}]
    _write_jsonl(tmp_path / "bad.jsonl", bad)

    def count() -> int:
        return sqlite3.connect(store / "workspace.sqlite3").execute("SELECT COUNT(*) FROM votes").fetchone()[0]

    assert "o_nothere" in one_line_error(bench("preferences", "import", str(store), "--votes",
                                               str(tmp_path / "bad.jsonl")))
    assert count() == 0
    dry = bench("preferences", "import", str(store), "--votes", str(tmp_path / "bad.jsonl"), "--skip-unknown",
                "--dry-run")
    assert dry.returncode == 0 and "Would add 3 new" in dry.stdout and count() == 0
    ok = bench("preferences", "import", str(store), "--votes", str(tmp_path / "bad.jsonl"), "--skip-unknown",
               "--source", "fdb-site")
    assert ok.returncode == 0 and "Added 3 new" in ok.stdout and "1 on unknown outputs left out" in ok.stdout
    db = sqlite3.connect(store / "workspace.sqlite3")
    assert {r[0] for r in db.execute("SELECT source FROM votes")} == {"fdb-site"}
    assert db.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 6
    # CSV with per-side rubric scores; an out-of-range score refuses the file
    header = "rater,pair_id,choice,score.left.layout,score.right.layout\n"
    (tmp_path / "v.csv").write_text(header + f"bob,{pairs[4]['pair_id']},tie,3,3\n")
    assert "Added 1 new" in bench("preferences", "import", str(store), "--votes", str(tmp_path / "v.csv")).stdout
    (tmp_path / "w.csv").write_text(header + f"bob,{pairs[5]['pair_id']},right,3,9\n")
    assert "outside 1..5" in one_line_error(bench("preferences", "import", str(store), "--votes",
                                                  str(tmp_path / "w.csv")))
    (tmp_path / "x.jsonl").write_text(json.dumps({"rater": "bob", "pair_id": pairs[6]["pair_id"],
                                                  "choice": "maybe"}) + "\n")
    assert "x.jsonl:1: choice 'maybe'" in one_line_error(bench("preferences", "import", str(store), "--votes",
                                                               str(tmp_path / "x.jsonl")))
    assert count() == 4


def test_rank_by_model_and_condition_and_raters_per_pair(bench, arms_job, tmp_path):
    store = _make(bench, arms_job, tmp_path, "--condition", "one-shot")
    votes = _votes(store, {"ann": "person"}, 1, random.Random(4))
    _write_jsonl(tmp_path / "v.jsonl", votes)
    assert bench("preferences", "import", str(store), "--votes", str(tmp_path / "v.jsonl")).returncode == 0
    by_model = json.loads(bench("preferences", "rank", str(store), "--by", "model", "--bootstrap", "10", "--json").stdout)
    assert {r["name"] for r in by_model["tables"][0]["ratings"]} == {"m1", "m2", "m3"}
    # a1/m1 against a2/m1 is one model against itself: not a game when rating models
    assert by_model["tables"][0]["games"] < len(votes)
    by_condition = json.loads(bench("preferences", "rank", str(store), "--by", "condition", "--bootstrap", "0",
                                    "--json").stdout)
    assert by_condition["tables"][0]["ratings"] == []  # every output has the one condition
    assert "18 of 18 pairs do not have 2 rater(s)" in one_line_error(
        bench("preferences", "rank", str(store), "--raters-per-pair", "2"), code=1)
    for cluster in ("vote", "rater", "task", "rater+task"):
        doc = json.loads(bench("preferences", "rank", str(store), "--cluster", cluster, "--bootstrap", "5",
                               "--json").stdout)
        assert doc["tables"][0]["cluster"] == cluster
    assert "--cluster" in one_line_error(bench("preferences", "rank", str(store), "--cluster", "moon"))
