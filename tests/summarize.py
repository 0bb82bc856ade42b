#!/usr/bin/env python3
"""Turns meson's testlog.json files into the suite's closing line: `N passed, N failed, N skipped`.

doctest executables report per test case ("[doctest] test cases: 12 | 11 passed | 1 failed | 0
skipped"). doctest has no run-time skip, so a case whose prerequisite is missing prints the marker
line `MYR-SKIP<TAB><case><TAB><why>` (tests/support/harness.hpp) and returns, which doctest counts as
passed: each such case is moved from passed to skipped here. Other tests (scripts) count as one
each, and meson's SKIP result (exit 77) as one skip. scripts/hygiene.py writes its checks as records
of the same shape, with a "why" naming the first problem, shown on the FAILED line.

Nothing here can turn a failure into success:
- an executable that crashed or timed out, before or after printing its summary, is a failure;
- a log named on the command line that is missing, or holds no test at all, is a failure;
- `BUILD-FAILED:<stage>` and `STAGE-FAILED:<stage>:<why>` arguments are failures.

Usage: summarize.py [--strict] LOG|BUILD-FAILED:stage|STAGE-FAILED:stage:why ...
With --strict (CI), a skip is also counted as a failure: CI installs every prerequisite.
"""
import json
import re
import sys

DOCTEST = re.compile(r"\[doctest\] test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed \|\s*(\d+) skipped")
SKIP_MARK = re.compile(r"^MYR-SKIP\t([^\t\n]*)\t(.*)$", re.M)
OK_RESULTS = ("OK", "EXPECTEDFAIL")


class Totals:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        self.skips = []
        self.deselected = []

    def fail(self, what):
        self.failed += 1
        self.failures.append(what)


def records(path, totals):
    """Yields the test records of one log; a log that is missing or empty is a failure."""
    if path.startswith("BUILD-FAILED:"):
        totals.fail(f"build of stage {path.split(':', 1)[1]}")
        return
    if path.startswith("STAGE-FAILED:"):
        _, stage, why = path.split(":", 2)
        totals.fail(f"stage {stage}: {why}")
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line for line in f if line.strip()]
    except FileNotFoundError:
        totals.fail(f"{path} (no test log)")
        return
    if not lines:
        totals.fail(f"{path} (the log holds no test)")
        return
    for line in lines:
        yield json.loads(line)


def count(t, totals):
    name = t.get("name", "?")
    result = t.get("result")
    out = (t.get("stdout", "") or "") + (t.get("stderr", "") or "")
    skipped_cases = {}
    for case, why in SKIP_MARK.findall(out):
        skipped_cases.setdefault(case, why)
    for case, why in skipped_cases.items():
        totals.skips.append(f"{name}: {case}: {why}")
    m = DOCTEST.findall(out)
    if m:
        _, p, f, s = map(int, m[-1])
        # A stage or a test's definition may choose cases by name (--test-case-exclude: the arm64
        # stage's cases qemu-user cannot run, listed with the reason in scripts/test.sh and
        # docs/testing.md; --test-case: one executable's slow case run as a test of suite `slow`).
        # doctest counts the others as skipped; they are not skips of a missing prerequisite but
        # not part of this test, so they are named apart and counted nowhere.
        chosen = [str(a) for a in (t.get("command") or [])
                  if str(a).startswith(("--test-case-exclude=", "-tce=", "--test-case=", "-tc="))]
        if s and chosen:
            totals.deselected.append(f"{name}: {s} case(s) left out by {chosen[0].split('=')[0]}")
            s = 0
        # A skipped case returned early and doctest counted it as passed (or failed, in strict mode,
        # where the marker is followed by a FAIL: then it stays a failure).
        moved = min(len(skipped_cases), p)
        totals.passed += p - moved
        totals.skipped += s + moved
        totals.failed += f
        if f:
            totals.failures.append(f"{name} ({f} failed case(s))")
        if result not in OK_RESULTS and result != "SKIP" and f == 0:
            totals.fail(f"{name} ({result} after its summary)")
    elif result in OK_RESULTS:
        totals.passed += 1
    elif result == "SKIP":
        totals.skipped += 1
        totals.skips.append(f"{name}: skipped by its runner")
    else:
        # A check that is not a test program (scripts/hygiene.py) says what failed in "why".
        why = t.get("why")
        totals.fail(f"{name} ({result}: {why})" if why else f"{name} ({result})")


def main(argv):
    strict = "--strict" in argv
    paths = [a for a in argv if a != "--strict"]
    totals = Totals()
    if not paths:
        totals.fail("no test log was given")
    for path in paths:
        for t in records(path, totals):
            count(t, totals)
    for what in totals.skips:
        print(f"SKIPPED: {what}")
    for what in totals.deselected:
        print(f"NOT RUN: {what}")
    if strict and totals.skipped:
        totals.fail(f"{totals.skipped} skip(s) in strict mode (CI must install every prerequisite)")
    for what in totals.failures:
        print(f"FAILED: {what}")
    if totals.passed + totals.failed == 0:
        totals.fail("no test ran")
        print("FAILED: no test ran")
    print(f"{totals.passed} passed, {totals.failed} failed, {totals.skipped} skipped")
    return 1 if totals.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
