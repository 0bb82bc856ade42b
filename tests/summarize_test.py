#!/usr/bin/env python3
"""Tests of tests/summarize.py, the script that turns meson's logs into the run's closing line: the
verdict of the whole suite rests on it, so each way it could call a bad run good is tried here."""
import json
import os
import subprocess
import sys
import tempfile

from checks import Checks

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARIZE = os.path.join(HERE, "summarize.py")


def doctest_out(cases, passed, failed, skip_marks=()):
    marks = "".join(f"MYR-SKIP\t{case}\t{why}\n" for case, why in skip_marks)
    return marks + (f"[doctest] test cases: {cases} | {passed} passed | {failed} failed | 0 skipped\n")


def summarize(tmp, records, *extra, strict=False):
    """Writes `records` (None: no file; []: an empty file) and returns (exit code, last line)."""
    args = [sys.executable, SUMMARIZE] + (["--strict"] if strict else [])
    if records is not None:
        path = os.path.join(tmp, f"log{len(os.listdir(tmp))}.json")
        with open(path, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        args.append(path)
    args += list(extra)
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stdout.strip().splitlines()[-1], p.stdout


checks = Checks("summarize.py")
expect = checks.expect


with tempfile.TemporaryDirectory() as tmp:
    ok = {"name": "unit-a", "result": "OK", "stdout": doctest_out(3, 3, 0)}
    rc, line, _ = summarize(tmp, [ok])
    expect("all passed", (rc, line), (0, "3 passed, 0 failed, 0 skipped"))

    skipping = {"name": "unit-b", "result": "OK",
                "stdout": doctest_out(5, 5, 0, [("case: needs root", "needs root: mount")] * 2 +
                                      [("case: other", "no node")])}
    rc, line, out = summarize(tmp, [skipping])
    expect("a skip marker moves a case from passed to skipped, once per case", (rc, line),
           (0, "3 passed, 0 failed, 2 skipped"))
    expect("the skip is named", "SKIPPED: unit-b: case: needs root: needs root: mount" in out, True)

    rc, line, _ = summarize(tmp, [skipping], strict=True)
    expect("strict mode fails a skip", rc, 1)

    filtered = {"name": "integration-x", "result": "OK",
                "command": ["integration_x_test", "--test-case-exclude=*(strace)*"],
                "stdout": "[doctest] test cases: 6 | 4 passed | 0 failed | 2 skipped\n"}
    rc, line, out = summarize(tmp, [filtered], strict=True)
    expect("cases a stage leaves out by name are neither skips nor passes, also in strict mode",
           (rc, line), (0, "4 passed, 0 failed, 0 skipped"))
    expect("the left-out cases are named", "NOT RUN: integration-x: 2 case(s)" in out, True)
    chosen = dict(filtered, command=["integration_x_test", "-tc=*resumes after*"])
    rc, line, out = summarize(tmp, [chosen], strict=True)
    expect("cases a test's own -tc= filter leaves out are neither skips nor passes",
           (rc, line), (0, "4 passed, 0 failed, 0 skipped"))
    expect("they are named with the filter", "NOT RUN: integration-x: 2 case(s) left out by -tc" in out,
           True)
    unfiltered = dict(filtered, command=["integration_x_test"])
    rc, line, _ = summarize(tmp, [unfiltered], strict=True)
    expect("doctest's own skips still count without an exclusion", (rc, line[-9:]), (1, "2 skipped"))

    crashed = {"name": "unit-c", "result": "FAIL", "stdout": doctest_out(2, 2, 0)}
    rc, line, _ = summarize(tmp, [crashed])
    expect("a crash after the summary fails", (rc, line), (1, "2 passed, 1 failed, 0 skipped"))

    no_summary = {"name": "unit-d", "result": "TIMEOUT", "stdout": "half a line"}
    rc, line, _ = summarize(tmp, [no_summary])
    expect("a timeout before the summary fails", (rc, line), (1, "0 passed, 1 failed, 0 skipped"))

    failed_case = {"name": "unit-e", "result": "FAIL", "stdout": doctest_out(2, 1, 1)}
    rc, line, _ = summarize(tmp, [failed_case])
    expect("a failed case fails", (rc, line), (1, "1 passed, 1 failed, 0 skipped"))

    rc, line, _ = summarize(tmp, [])
    expect("an empty log (a stage that ran nothing) fails", rc, 1)

    rc, line, _ = summarize(tmp, None, os.path.join(tmp, "missing.json"))
    expect("a missing log fails", rc, 1)

    rc, line, _ = summarize(tmp, [ok], "BUILD-FAILED:asan")
    expect("a failed build fails", (rc, line), (1, "3 passed, 1 failed, 0 skipped"))

    rc, line, _ = summarize(tmp, [ok], "STAGE-FAILED:static:meson test exited 1")
    expect("a failed stage fails", rc, 1)

    rc, line, _ = summarize(tmp, None)
    expect("no log at all fails", rc, 1)

    script = {"name": "fuzz-x", "result": "SKIP", "stdout": ""}
    rc, line, _ = summarize(tmp, [ok, script])
    expect("meson's SKIP is a skip", (rc, line), (0, "3 passed, 0 failed, 1 skipped"))

    # scripts/hygiene.py writes one record per check; a failed one names its first problem.
    hygiene = [{"name": "hygiene-format", "result": "OK", "stdout": "hygiene format: ok\n"},
               {"name": "hygiene-docs", "result": "FAIL", "stdout": "hygiene docs: FAILED (2)\n",
                "why": "docs/x.md:3: names src/gone.cpp, which does not exist (and 1 more)"},
               {"name": "hygiene-functions", "result": "SKIP", "stdout": "no ctags\n"}]
    rc, line, out = summarize(tmp, hygiene)
    expect("each hygiene check counts once", (rc, line), (1, "1 passed, 1 failed, 1 skipped"))
    expect("a failed check says which file and why",
           "FAILED: hygiene-docs (FAIL: docs/x.md:3: names src/gone.cpp, which does not exist "
           "(and 1 more))" in out, True)

checks.finish()
