#!/usr/bin/env python3
"""The footprint budget test (issue 38): measures what the shipped binary costs and fails when a
figure exceeds its budget in tests/budget/budgets.txt, printing each figure beside its budget and
goal. Growth is then a decision written in that file (a raised budget with its reason, in the
commit that needs it), never an accident.

Figures:
- size.<arch>: the stripped size of build/release-<arch>/myriarch-updater, the binary
  scripts/release.sh builds and ships. amd64 is required (the static stage of scripts/test.sh
  builds it first); arm64 is measured when build/release-arm64 exists and is up to date.
- idle.rss, idle.private_dirty (kB): the amd64 release binary as PID 1 of a PID namespace with the
  stand-in supervisor, OpAMP connected over wss:// to the test server, /metrics on and scraped,
  read from /proc/PID/smaps_rollup after IDLE_SETTLE seconds (10) by tests/bench/idle.sh, which
  measures tini-static and catatonit in the same run; they and the updater's resident kB by
  mapping are printed beside.

Exit 0 when every measured figure is within its budget, 1 when one is over (or a measurement
failed), 77 (a skip, named) when a required figure could not be measured here: no release build,
or not root / no unshare for the idle figures.
"""
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("MYRIARCH_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("MYRIARCH_BUILD_DIR", os.path.join(SOURCE, "build", "static"))
BUDGETS = os.path.join(HERE, "budgets.txt")
STRIP = {"amd64": "strip", "arm64": "aarch64-linux-gnu-strip"}  # as scripts/release.sh strips
UNITS = {"size": "B", "idle": "kB"}


def read_budgets(path):
    """{figure: (budget, goal, reason)}; a malformed line is an error naming it."""
    budgets = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 3)
            try:
                budget, goal = (int(p.replace(",", "")) for p in parts[1:3])
            except (ValueError, IndexError):
                sys.exit(f"{path}:{n}: expected `figure budget goal reason`, got {line!r}")
            if len(parts) < 4:
                sys.exit(f"{path}:{n}: {parts[0]}: a budget needs its reason")
            budgets[parts[0]] = (budget, goal, parts[3])
    return budgets


def newest_source():
    """The newest modification time of what the binary is built from. (ninja -n cannot say: the
    git commit stamp is regenerated on every build, so it always has work.)"""
    files = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard", "src", "subprojects",
                            "meson.build", "meson_options.txt", "scripts/cross"],
                           capture_output=True, check=True).stdout.split(b"\0")
    paths = [os.path.join(SOURCE, f.decode()) for f in files if f]
    return max(os.path.getmtime(p) for p in paths if os.path.exists(p))


def release_size(arch, tmp):
    """(bytes, None) or (None, why not measured)."""
    d = os.path.join(SOURCE, "build", f"release-{arch}")
    if not os.path.exists(os.path.join(d, "myriarch-updater")):
        return None, f"no {d}/myriarch-updater (MYR_ARCHES={arch} bash scripts/release.sh builds it)"
    if os.path.getmtime(os.path.join(d, "myriarch-updater")) < newest_source():
        return None, f"{d} is older than the source (MYR_ARCHES={arch} bash scripts/release.sh)"
    out = os.path.join(tmp, f"myriarch-updater-{arch}")
    subprocess.run([STRIP[arch], "-o", out, os.path.join(d, "myriarch-updater")], check=True)
    return os.path.getsize(out), None


def reserve_port():
    """A port for the probe listener, reserved the way tests/support/harness.cpp's reserve_port()
    does (an flock on /tmp/myr-test-ports/<port>, outside the ephemeral range) so that no other
    test takes it; held until this process ends."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo, hi = (int(x) for x in f.read().split())
    first, last = (10000, lo - 1) if lo - 10000 >= 65535 - hi else (hi + 1, 65535)
    os.makedirs("/tmp/myr-test-ports", mode=0o1777, exist_ok=True)
    start = int.from_bytes(os.urandom(2), "little") % (last - first + 1)
    for i in range(last - first + 1):
        port = first + (start + i) % (last - first + 1)
        fd = os.open(f"/tmp/myr-test-ports/{port}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
            return port  # fd stays open: the lock lives as long as this process
        except OSError:
            os.close(fd)
    sys.exit("no free port outside the ephemeral range")


def idle_figures(binary, tmp):
    """({figure: kB}, None) or (None, why not measured). Raises on a failed measurement."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return None, "idle figures need root and unshare --pid (the binary runs as PID 1)"
    figures = os.path.join(tmp, "idle.txt")
    env = dict(os.environ, SETTLE=os.environ.get("IDLE_SETTLE", "10"), READINGS="1",
               FIGURES=figures, PORT=str(reserve_port()), CA="system",
               BENCH_DIR=tempfile.mkdtemp(prefix="myr-budget-idle-", dir="/var/tmp"))
    r = subprocess.run(["sh", os.path.join(SOURCE, "tests", "bench", "idle.sh"), binary, BUILD],
                       env=env, capture_output=True, text=True, timeout=120)
    print(r.stdout, end="")
    if r.returncode != 0:
        raise RuntimeError(f"tests/bench/idle.sh exited {r.returncode}: {r.stderr.strip()}")
    values = {}
    with open(figures) as f:
        for line in f:
            name, value = line.split()
            values[name] = int(value)
    return values, None


def main():
    budgets = read_budgets(BUDGETS)
    measured, not_measured, required_missing = {}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ("amd64", "arm64"):
            size, why = release_size(arch, tmp)
            if size is None:
                not_measured[f"size.{arch}"] = why
                if arch == "amd64":
                    required_missing.append(why)
            else:
                measured[f"size.{arch}"] = size
        idle = None
        if "size.amd64" not in measured:
            not_measured["idle.rss"] = not_measured["idle.private_dirty"] = \
                "the idle figures are of the amd64 release binary, not measured here"
        else:
            try:
                idle, why = idle_figures(os.path.join(tmp, "myriarch-updater-amd64"), tmp)
            except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
                print(f"idle: the measurement failed: {e}")
                return 1
            if idle is None:
                not_measured["idle.rss"] = not_measured["idle.private_dirty"] = why
                required_missing.append(why)
            else:
                measured["idle.rss"] = idle["updater.rss"]
                measured["idle.private_dirty"] = idle["updater.private_dirty"]
    over = report(budgets, measured, not_measured, idle)
    if over:
        print(f"\nOVER BUDGET: {', '.join(over)}. Cut, or raise the budget in "
              "tests/budget/budgets.txt with the reason, in the same commit.")
        return 1
    if required_missing:
        print(f"\nnot measured here: {'; '.join(sorted(set(required_missing)))}")
        return 77
    return 0


def report(budgets, measured, not_measured, idle):
    """Prints every figure beside its budget and goal; returns the figures over budget."""
    over = []
    print(f"{'figure':<20} {'measured':>12} {'budget':>12} {'goal':>12}  verdict")
    for name, (budget, goal, reason) in budgets.items():
        unit = UNITS[name.split(".")[0]]
        if name not in measured:
            why = not_measured.get(name, "no measurement of this name in tests/budget/budget.py")
            print(f"{name:<20} {'-':>12} {budget:>12,} {goal:>12,}  not measured: {why}")
            continue
        value = measured[name]
        verdict = "OVER BUDGET" if value > budget else "within budget"
        verdict += ", goal met" if value <= goal else f", {value - goal:,} {unit} over the goal"
        if value > budget:
            over.append(f"{name} {value:,} {unit} > {budget:,}")
        print(f"{name:<20} {value:>12,} {budget:>12,} {goal:>12,}  {verdict} ({unit})")
        print(f"{'':<20} budget: {reason}")
    if idle:
        print("\nsame run, as PID 1 with the same child: "
              + "; ".join(f"{who} RSS {idle[who + '.rss']:,} kB, private dirty "
                          f"{idle[who + '.private_dirty']:,} kB" for who in ("tini", "catatonit")))
        maps = sorted(((k.split(".", 2)[2], v) for k, v in idle.items()
                       if k.startswith("updater.map.") and v), key=lambda kv: -kv[1])
        print("updater resident by mapping: " + ", ".join(f"{n} {v:,} kB" for n, v in maps))
    return over


if __name__ == "__main__":
    sys.exit(main())
