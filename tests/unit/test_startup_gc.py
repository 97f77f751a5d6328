"""The collector runs rarely while ``bench`` starts, and as usual once it has started (issue 21, imports).

Each case runs in a fresh interpreter: the collector's settings are the process's."""

from __future__ import annotations

from tests.fresh_python import python_prints as _run


def test_a_run_collects_rarely_until_its_first_sandbox_then_freezes_what_startup_left():
    out = _run("import gc\n"
               "from benchflow.util import startup_gc\n"
               "default = gc.get_threshold()\n"
               "startup_gc.starting()\n"
               "during = gc.get_threshold()[0]\n"
               "kept = [[i] for i in range(5000)]\n"
               "from benchflow.jobs import ahead\n"
               "ahead.begin()\n"
               "print(during == startup_gc.STARTUP_THRESHOLD, gc.get_threshold() == default,\n"
               "      gc.get_freeze_count() >= len(kept))")
    assert out == "True True True"


def test_a_command_that_never_starts_a_sandbox_collects_as_usual_after_its_first_collection():
    out = _run("import gc\n"
               "from benchflow.util import startup_gc\n"
               "default = gc.get_threshold()\n"
               "startup_gc.starting()\n"
               "kept = [[i] for i in range(2 * startup_gc.STARTUP_THRESHOLD)]\n"
               "before = gc.get_stats()[0]['collections']\n"
               "junk = [[j] for j in range(5 * default[0])]\n"
               "print(gc.get_threshold() == default, gc.get_stats()[0]['collections'] - before >= 4)")
    assert out == "True True"


def test_nothing_changes_when_the_collector_is_off_or_startup_was_never_declared():
    out = _run("import gc\n"
               "from benchflow.util import startup_gc\n"
               "default = gc.get_threshold()\n"
               "startup_gc.started()\n"
               "gc.disable()\n"
               "startup_gc.starting()\n"
               "print(gc.get_threshold() == default, gc.get_freeze_count(), gc.isenabled())")
    assert out == "True 0 False"


def test_the_bench_process_starts_with_it_and_a_caller_passing_argv_does_not():
    check = ("print(gc.get_threshold()[0] == startup_gc.STARTUP_THRESHOLD or gc.get_freeze_count() > 0)")
    for argv, expected in (("", "True"), ("['--help']", "False")):
        out = _run("import gc, sys\n"
                   "sys.argv = ['bench', '--help']\n"
                   "from benchflow.cli import main\n"
                   "from benchflow.util import startup_gc\n"
                   "try:\n"
                   f"    main.main({argv})\n"
                   "except SystemExit:\n"
                   f"    {check}\n")
        assert out.splitlines()[-1] == expected, argv
