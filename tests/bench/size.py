#!/usr/bin/env python3
"""What takes the space in the binary: a GNU ld link map (the build writes
myriarch-updater.map next to the binary) summed by library and by our own module.

    tests/bench/size.py MAP [BASELINE_MAP] [--members LIB ...]

Counts the input sections the linker kept in allocated output sections: code, read-only data,
data, unwind tables (.eh_frame, .gcc_except_table) and relocations; .bss/.tbss take no file
space and are listed apart. Stripping removes only symbols and debug sections, which are not
counted, so the total is close to the stripped size (the rest is ELF headers and alignment).
With a baseline map, both columns and the difference are printed. --members LIB lists the
largest archive members of LIB (for example libc or libstdc++).
"""
import os
import re
import sys
from collections import defaultdict

NOBITS = (".bss", ".tbss")
SKIP = (".debug", ".comment", ".gnu.warning", ".note.stapsdt", ".stab", ".gnu_debuglink")

INPUT_FULL = re.compile(r"^ (\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
INPUT_NAME = re.compile(r"^ (\S+)$")
CONT = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
FILL = re.compile(r"^ \*fill\*\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)")
OUTPUT = re.compile(r"^(\.?[A-Za-z_][\w.]*)(\s|$)")


def group_of(path):
    """(group, member) for an input file as the map names it."""
    # Meson's thin archives name the object itself: src/net/libmyr_net.a.p/websocket.cpp.o
    # (sometimes as src/net/../core/…).
    path = os.path.normpath(path) if "/../" in path else path
    m = re.search(r"src/(\w+)/libmyr_(\w+)\.a(?:\.p/|\()([^)]*)\)?$", path)
    if m:
        mod = m.group(1)
        if m.group(2).endswith("_pb"):
            return f"ours: {mod} (generated protobuf)", m.group(3)
        return f"ours: {mod}", m.group(3)
    if "src_cli_main.cpp.o" in path:
        return "ours: cli", "main.cpp.o"
    # With -Db_lto=true the linker sees GCC's link-time partitions, not our objects: every module
    # and llhttp (the only other library compiled here) are mixed in them. The per-module split
    # comes from the same build without LTO.
    if re.search(r"\.ltrans\d*\.ltrans\.o$", path):
        return "ours + llhttp (LTO partitions)", path.rsplit("/", 1)[-1]
    m = re.search(r"([^/]+)\.a(?:\.p/|\()([^)]*)\)?$", path)
    if m:
        lib = m.group(1)
        lib = {"libuv_a": "libuv", "libm-2.36": "libm", "libgcc_eh": "libgcc"}.get(lib, lib)
        return lib, m.group(2)
    if re.search(r"/(crt\w*|crtbegin\w*|crtend\w*)\.o$", path):
        return "crt", path.rsplit("/", 1)[-1]
    return "other", path


def parse(path):
    sizes = defaultdict(int)  # group -> file bytes
    nobits = defaultdict(int)
    members = defaultdict(lambda: defaultdict(int))
    fill = 0
    with open(path, errors="replace") as f:
        lines = f.read().split("\n")
    try:
        start = lines.index("Linker script and memory map")
    except ValueError:
        sys.exit(f"{path}: not a GNU ld map (no 'Linker script and memory map')")
    out_sec = ""
    pending = None
    for line in lines[start + 1:]:
        if line.startswith("OUTPUT("):
            break
        if pending is not None:
            c = CONT.match(line)
            name, pending = pending, None
            if c:
                add(name, out_sec, int(c.group(2), 16), c.group(3), sizes, nobits, members)
                continue
        m = OUTPUT.match(line)
        if m:
            out_sec = m.group(1)
            continue
        m = FILL.match(line)
        if m and not out_sec.startswith(SKIP) and out_sec not in NOBITS:
            fill += int(m.group(2), 16)
            continue
        m = INPUT_FULL.match(line)
        if m:
            add(m.group(1), out_sec, int(m.group(3), 16), m.group(4), sizes, nobits, members)
            continue
        m = INPUT_NAME.match(line)
        if m and not line.startswith(" *"):
            pending = m.group(1)
    sizes["(alignment fill)"] += fill
    return sizes, nobits, members


def add(name, out_sec, size, path, sizes, nobits, members):
    if size == 0 or out_sec.startswith(SKIP) or name.startswith(SKIP):
        return
    group, member = group_of(path.strip())
    if out_sec in NOBITS or name.startswith(NOBITS):
        nobits[group] += size
        return
    sizes[group] += size
    members[group][member] += size


def kb(n):
    return f"{n / 1024:,.1f}"


def main(argv):
    args = [a for a in argv[1:]]
    show = []
    if "--members" in args:
        i = args.index("--members")
        show = args[i + 1:]
        args = args[:i]
    if not args:
        sys.exit(__doc__)
    new, new_bss, new_members = parse(args[0])
    base = parse(args[1]) if len(args) > 1 else None
    groups = set(new) | (set(base[0]) if base else set())
    order = sorted(groups, key=lambda g: -max(new.get(g, 0), base[0].get(g, 0) if base else 0))
    total = sum(new.values())
    if base:
        btotal = sum(base[0].values())
        print(f"| part | baseline kB | now kB | difference kB |")
        print(f"|---|---:|---:|---:|")
        for g in order:
            b, n = base[0].get(g, 0), new.get(g, 0)
            print(f"| {g} | {kb(b)} | {kb(n)} | {kb(n - b)} |")
        print(f"| **total (file bytes)** | **{kb(btotal)}** | **{kb(total)}** | "
              f"**{kb(total - btotal)}** |")
        print(f"| .bss/.tbss (memory, not file) | {kb(sum(base[1].values()))} | "
              f"{kb(sum(new_bss.values()))} | |")
    else:
        print(f"| part | kB | share |")
        print(f"|---|---:|---:|")
        for g in order:
            print(f"| {g} | {kb(new[g])} | {100 * new[g] / total:.1f}% |")
        print(f"| **total (file bytes)** | **{kb(total)}** | |")
        print(f"| .bss/.tbss (memory, not file) | {kb(sum(new_bss.values()))} | |")
    ours = sum(v for g, v in new.items() if g.startswith("ours"))
    print(f"\nours: {kb(ours)} kB, libraries: {kb(total - ours)} kB")
    for lib in show:
        mem = new_members.get(lib, {})
        print(f"\nlargest members of {lib} ({kb(sum(mem.values()))} kB):")
        for name, size in sorted(mem.items(), key=lambda kv: -kv[1])[:25]:
            print(f"  {kb(size):>8} kB  {name}")


if __name__ == "__main__":
    main(sys.argv)
