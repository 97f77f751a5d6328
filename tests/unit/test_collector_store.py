"""The collector store: migrations, read-only readers, and refusals."""

from __future__ import annotations

import sqlite3

import pytest

from benchflow.collector import store
from benchflow.collector.records import Assignment, Output, Pair, Vote
from benchflow.collector.schema import SCHEMA_VERSION


def _filled(tmp_path):
    conn = store.create_store(tmp_path / "s")
    store.add_output(conn, Output("o_1", "t", "v1", "/x", agent="a", model="m"))
    store.add_output(conn, Output("o_2", "t", "v1", "/y", agent="b", model="m"))
    store.add_pair(conn, Pair("p_1", 0, "t", "v1", "o_2", "o_1", swapped=True))
    store.add_assignment(conn, Assignment("a_1", "ann", "person", "p_1"))
    store.add_vote(conn, Vote("v_1", "ann", "person", "o_2", "o_1", "left", pair_id="p_1",
                              assignment_id="a_1", scores={("o_2", "layout"): 4, ("o_1", "layout"): 2}))
    conn.close()
    return tmp_path / "s"


def test_round_trip_through_a_read_only_reader(tmp_path):
    folder = _filled(tmp_path)
    ro = store.open_readonly(folder)
    assert [p.swapped for p in store.pairs(ro)] == [True]
    (vote,) = store.votes(ro, assignment_id="a_1")
    assert vote.choice == "left" and vote.scores == {("o_2", "layout"): 4.0, ("o_1", "layout"): 2.0}
    assert store.get_assignment(ro, "a_1").pair_id == "p_1"
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro.execute("DELETE FROM votes")


def test_schema_version_recorded_and_newer_refused(tmp_path):
    folder = _filled(tmp_path)
    conn = sqlite3.connect(folder / store.DB_NAME)
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    conn.execute("INSERT INTO schema_version VALUES (?, 'x')", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(store.StoreError, match="newer"):
        store.open_readonly(folder)
    with pytest.raises(store.StoreError, match="newer"):
        store.open_store(folder)


def test_bad_choice_and_missing_store_refused(tmp_path):
    folder = _filled(tmp_path)
    conn = store.open_store(folder)
    with pytest.raises(store.StoreError, match="choice"):
        store.add_vote(conn, Vote("v_2", "ann", "person", "o_1", "o_2", "maybe"))
    with pytest.raises(sqlite3.IntegrityError):
        store.add_vote(conn, Vote("v_3", "ann", "person", "o_1", "o_404", "left"))
    assert store.vote_ids(conn) == {"v_1"}
    with pytest.raises(store.StoreError, match="no collector store"):
        store.open_readonly(tmp_path / "elsewhere")
    with pytest.raises(store.StoreError, match="already exists"):
        store.create_store(folder)
