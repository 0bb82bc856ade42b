#!/usr/bin/env python3
"""Turns meson's testlog.json files into the suite's closing line: `N passed, N failed, N skipped`.

doctest executables report per test case ("[doctest] test cases: 12 | 11 passed | 1 failed | 0
skipped"); other tests (scripts) count as one each. An executable that crashed before printing its
summary still counts as one failure, so a crash can never look like success.
"""
import json
import re
import sys

DOCTEST = re.compile(r"\[doctest\] test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed \|\s*(\d+) skipped")
TAP_SKIP = re.compile(r"^SKIP\b", re.M)

passed = failed = skipped = 0
failures = []


def records(paths):
    for path in paths:
        if path.startswith("BUILD-FAILED:"):
            yield {"name": f"build of stage {path.split(':', 1)[1]}", "result": "FAIL"}
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    yield json.loads(line)
        except FileNotFoundError:
            yield {"name": f"{path} (no test log)", "result": "FAIL"}


for t in records(sys.argv[1:]):
    out = t.get("stdout", "") or ""
    result = t.get("result")
    m = DOCTEST.findall(out)
    if m:
        _, p, f, s = map(int, m[-1])
        passed += p
        failed += f
        skipped += s
        if result not in ("OK", "EXPECTEDFAIL", "SKIP") and f == 0:
            failed += 1  # crashed or timed out after printing a summary
        if f or result not in ("OK", "EXPECTEDFAIL", "SKIP"):
            failures.append(t["name"])
    elif result == "OK":
        passed += 1
    elif result == "SKIP":
        skipped += 1
    else:
        failed += 1
        failures.append(f'{t["name"]} ({result})')

for name in failures:
    print(f"FAILED: {name}")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
