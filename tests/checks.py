"""The harness of the Python tests under tests/ (summarize_test.py, hygiene_test.py): named
checks, one line per failure, a summary line, and exit status 1 on any failure."""
import sys


class Checks:
    def __init__(self, subject):
        self.subject = subject
        self.count = 0
        self.failures = []

    def expect(self, name, got, want):
        self.count += 1
        if got != want:
            self.failures.append(f"{name}: got {got!r}, want {want!r}")

    def finish(self):
        for f in self.failures:
            print("FAIL:", f)
        print(f"{self.subject}: {self.count} checks, {len(self.failures)} failed")
        sys.exit(1 if self.failures else 0)
