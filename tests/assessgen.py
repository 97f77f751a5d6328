"""Build what ``bench assess`` tests start from: saved rollouts, refs, rubric, protocol, proof, a collector store.

The rollouts here are folders shaped like finished trials (``result.json`` + an
output); the integration test makes real ones with ``bench run``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchflow.assess.attempt import make_attempt_ref

PROTOCOL = {"schema": "benchflow.assessment-judge-protocol.v1", "question": "Which output is better?",
            "choices": ["left", "right", "tie", "skip"]}
RUBRIC = {"id": "clarity", "version": "1", "aspects": [{"id": "clarity", "label": "Clarity"}]}


@dataclass
class Kit:
    root: Path
    rollouts: list[Path]
    refs: list[Path]
    rubric: Path
    protocol: Path

    @property
    def sidecar(self) -> Path:
        return self.rollouts[0] / "assessment"

    def create_args(self) -> list[str]:
        return ["--attempt", str(self.refs[0]), "--attempt", str(self.refs[1]), "--rubric", str(self.rubric),
                "--rubric-id", "clarity", "--rubric-version", "1", "--protocol", str(self.protocol)]

    def output(self, index: int) -> Path:
        return self.rollouts[index] / "evidence" / "workspace"


def fake_rollout(root: Path, name: str, text: str, *, sandbox_id: str) -> Path:
    rollout = root / name
    (rollout / "evidence" / "workspace").mkdir(parents=True)
    (rollout / "evidence" / "workspace" / "hello.txt").write_text(text)
    (rollout / "result.json").write_text(json.dumps({
        "task_name": "hello", "trial_name": name, "task_digest": "sha256:" + "ab" * 32, "sandbox_id": sandbox_id,
        "environment": "test-provider", "rewards": {"reward": 1.0}}))
    return rollout


def write_ref(rollout: Path, out: Path) -> Path:
    output = rollout / "evidence" / "workspace"
    ref = make_attempt_ref(rollout, output=output, review_artifact=output / "hello.txt", sandbox_provider=None,
                           sandbox_role="solver", runtimes=[], media_type=None)
    out.write_text(json.dumps(ref))
    return out


def make_kit(root: Path) -> Kit:
    rollouts = [fake_rollout(root, "hello__aaaa", "hello from A\n", sandbox_id="sbx-a"),
                fake_rollout(root, "hello__bbbb", "hello from B\n", sandbox_id="sbx-b")]
    refs = [write_ref(r, root / f"ref-{side}.json") for r, side in zip(rollouts, "ab")]
    rubric = root / "rubric.json"
    rubric.write_text(json.dumps(RUBRIC))
    protocol = root / "protocol.json"
    protocol.write_text(json.dumps(PROTOCOL))
    return Kit(root, rollouts, refs, rubric, protocol)


def write_proof(kit: Kit, path: Path, *, states: tuple[str, str] = ("absent", "absent")) -> Path:
    """A release proof as a backend would observe it (the sandbox backend test makes real ones)."""
    observations = [{"provider": "test-provider", "runtime_id": rid, "role": "solver", "state": state,
                     "observed_at": "2026-01-01T00:00:00Z", "method": "test"}
                    for rid, state in zip(("sbx-a", "sbx-b"), states)]
    path.write_text(json.dumps({"schema": "benchflow.assessment-release-proof.v1", "observer": "test",
                                "observations": observations}))
    return path


def collector_store(kit: Kit, store: Path, *, choice: str | None, shown_left: int = 1) -> dict[str, str]:
    """A collector store with the two outputs, one pair (sides as given), an assignment and maybe a vote.

    ``choice`` is as shown (left/right/tie/skip); None writes no vote. Returns the ids.
    """
    from benchflow.collector import store as cs
    from benchflow.collector.records import Assignment, Output, Pair, Vote

    conn = cs.create_store(store)
    ids = {"A": "o_" + "1" * 16, "B": "o_" + "2" * 16, "pair": "p_" + "3" * 16, "assignment": "a_" + "4" * 16,
           "vote": "v_" + "5" * 16}
    for side, rollout in zip("AB", kit.rollouts):
        cs.add_output(conn, Output(ids[side], "hello", "sha256:" + "ab" * 32, str(rollout / "evidence" / "workspace"),
                                   trial_path=str(rollout)))
    left, right = (ids["B"], ids["A"]) if shown_left == 1 else (ids["A"], ids["B"])
    cs.add_pair(conn, Pair(ids["pair"], 0, "hello", "sha256:" + "ab" * 32, left, right, swapped=shown_left == 1))
    cs.add_assignment(conn, Assignment(ids["assignment"], "alice", "person", ids["pair"]))
    if choice is not None:
        cs.add_vote(conn, Vote(ids["vote"], "alice", "person", left, right, choice, pair_id=ids["pair"],
                               assignment_id=ids["assignment"], reason="clearer", source="test",
                               scores={(ids["A"], "clarity"): 4.0, (ids["B"], "clarity"): 2.0}))
    conn.close()
    return ids
