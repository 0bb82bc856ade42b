#!/usr/bin/env python3
"""The hygiene gate: what the compiler and the tests cannot see, checked on the source tree.

One named check per concern (docs/testing.md#hygiene):
  format     clang-format --dry-run --Werror with the repo's .clang-format, on the C and C++ files
             of src/ and tests/ (git ls-files; nothing there is generated or third-party: the
             protobuf code is generated into the build directory)
  includes   every `#include "x/..."` in src/<m>/, x another module, is a dependency that
             src/<m>/meson.build declares (`x_dep`), so the build enforces the module graph
  docs       every repository path and `path:line` that README.md, docs/*.md and
             packaging/**/README.md name exists, with the line inside the file; every dotted config
             key they name is a real key (read from the decoder's table in src/config/decode.cpp,
             and for the chart from its values.yaml)
  functions  Universal Ctags: no function in src/ over 120 lines, none in src/update/ and
             src/runtime/ over 80

Usage: hygiene.py [--log FILE] [CHECK...]     (no CHECK: all four)
       hygiene.py --list-format-files         the files `format` checks (scripts/format.sh)
Prints `hygiene <check>: ok` or `hygiene <check>: FAILED` with one line per problem
(`file:line: why`), and exits 1 when a check failed. A tool that is missing makes its check a skip
(exit 77 when nothing else ran). --log writes one JSON record per check in the shape of meson's
testlog.json, which tests/summarize.py counts like any test.
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUNCTION_LIMIT = 120
# The state machine and the composition root must read in one sitting (style.md).
FUNCTION_LIMIT_BY_DIR = {"src/update/": 80, "src/runtime/": 80}
CXX_EXT = (".c", ".cc", ".cpp", ".h", ".hpp")


class Skip(Exception):
    """A prerequisite of the check is missing: the check did not run."""


def git_files(*paths):
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *paths], check=True,
                         capture_output=True, text=True).stdout
    return [f for f in out.splitlines() if os.path.exists(os.path.join(ROOT, f))]


def modules():
    src = os.path.join(ROOT, "src")
    return sorted(d for d in os.listdir(src)
                  if os.path.isfile(os.path.join(src, d, "meson.build")))


# --- format -------------------------------------------------------------------------------------

def find_clang_format():
    for name in ("clang-format", "clang-format-14"):
        path = shutil.which(name)
        if path:
            return path
    raise Skip("clang-format is not installed (Debian package clang-format)")


def format_files():
    return [f for f in git_files("src", "tests") if f.endswith(CXX_EXT)]


def check_format():
    tool = find_clang_format()
    problems = []
    for f in format_files():
        r = subprocess.run([tool, "--style=file", "--dry-run", "--Werror", f], cwd=ROOT,
                           capture_output=True, text=True)
        if r.returncode == 0:
            continue
        # The first diagnostic names the first line that would change.
        first = re.search(r"^[^\n]*?:(\d+):\d+: (?:error|warning)", r.stderr, re.M)
        line = first.group(1) if first else "1"
        count = len(re.findall(r": (?:error|warning): code should be clang-formatted", r.stderr))
        problems.append(f"{f}:{line}: not clang-formatted ({count} place(s); "
                        f"scripts/format.sh rewrites it)")
    return problems


# --- includes -----------------------------------------------------------------------------------

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"', re.M)


def declared_modules(meson_build, all_modules, own):
    """The modules a module's meson.build names as dependencies: every `<module>_dep` it
    mentions (directly or through get_variable), and all of them for `myr_module_deps`."""
    text = open(meson_build, encoding="utf-8").read()
    text = re.sub(r"#[^\n]*", "", text)
    named = set(re.findall(r"\b([a-z0-9_]+)_dep\b", text))
    if "myr_module_deps" in re.sub(r"myr_module_deps\s*\+=", "", text):
        named |= set(all_modules)
    named.discard(own)
    return named & set(all_modules)


def check_includes():
    mods = modules()
    problems = []
    for m in mods:
        declared = declared_modules(os.path.join(ROOT, "src", m, "meson.build"), mods, m)
        for f in git_files(f"src/{m}"):
            if not f.endswith(CXX_EXT):
                continue
            text = open(os.path.join(ROOT, f), encoding="utf-8", errors="replace").read()
            for match in INCLUDE.finditer(text):
                x = match.group(1)
                if x == m or x not in mods or x in declared:
                    continue
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{f}:{line}: includes {x}/ but src/{m}/meson.build does not "
                                f"declare {x}_dep")
    return problems


# --- docs ---------------------------------------------------------------------------------------

def doc_files():
    files = ["README.md"] + sorted(f for f in git_files("docs") if f.endswith(".md"))
    files += sorted(f for f in git_files("packaging")
                    if os.path.basename(f) == "README.md")
    return files


def config_keys():
    """Every key of updater.yaml, dotted, from the decoder's own table: each section is a lambda
    returning `std::vector<Entry>{{"key", decoder}, ...}`, a nested section is
    `section_fn(name)`, and the root is `mapping(root, "", {...})`."""
    path = os.path.join(ROOT, "src", "config", "decode.cpp")
    text = open(path, encoding="utf-8").read()
    sections = {}
    for m in re.finditer(r"auto (\w+) = \[[^\]]*\]\s*\{\s*(?:\w[^;]*;\s*)*"
                         r"return std::vector<Entry>\{(.*?)\n\s*\};", text, re.S):
        sections[m.group(1)] = re.findall(r'\{"(\w+)",\s*([^\n]*)', m.group(2))
    # Decoders that wrap a section (`Decoder x = [..](..) { ...; section_fn(name)(...); }`).
    wrappers = dict(re.findall(r"Decoder (\w+) = \[.*?section_fn\((\w+)\)", text, re.S))
    root = re.search(r'mapping\(root, "",\s*\{(.*?)\n\s*\}\);', text, re.S)
    if not root or not sections:
        raise RuntimeError(f"{path}: the decoder's table was not found (has its shape changed?)")
    keys = set()

    def walk(prefix, entries):
        for name, decoder in entries:
            key = f"{prefix}.{name}" if prefix else name
            keys.add(key)
            nested = re.match(r"section_fn\((\w+)\)", decoder)
            target = nested.group(1) if nested else wrappers.get(decoder.rstrip("},").strip())
            if target in sections:
                walk(key, sections[target])

    walk("", re.findall(r'\{"(\w+)",\s*([^\n]*)', root.group(1)))
    if len(keys) < 20:
        raise RuntimeError(f"{path}: only {len(keys)} keys read from the decoder's table")
    return keys


def chart_keys():
    """Every values path of each chart under packaging/helm/, dotted."""
    try:
        import yaml
    except ImportError:
        raise Skip("python3-yaml is not installed (Debian package python3-yaml)")
    keys = set()

    def walk(prefix, node):
        if isinstance(node, dict):
            for k, v in node.items():
                key = f"{prefix}.{k}" if prefix else str(k)
                keys.add(key)
                walk(key, v)

    for f in git_files("packaging/helm"):
        if os.path.basename(f) == "values.yaml":
            walk("", yaml.safe_load(open(os.path.join(ROOT, f), encoding="utf-8")))
    return keys


def fault_points():
    """The dotted names of fault points and log events in src/ (`update.finish.before`): a doc
    naming one, or its prefix, is not naming a config key."""
    names = set()
    for f in git_files("src"):
        if f.endswith(CXX_EXT):
            text = open(os.path.join(ROOT, f), encoding="utf-8", errors="replace").read()
            names |= set(re.findall(r'"([a-z_]+(?:\.[a-z_]+)+)\.?"', text))
    return names


FILE_EXT = re.compile(r"\.(yaml|yml|json|md|txt|hpp|cpp|sh|py|mjs)$")
PATH_RUN = re.compile(r"[A-Za-z0-9_./:-]+")
LINE_SUFFIX = re.compile(r"^(.*?):(\d+)(?:-(\d+))?$")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
SET_ARG = re.compile(r"--set(?:-string)?[ =]([A-Za-z][\w.]*)=")
DOTTED = re.compile(r"^([A-Za-z]\w*(?:\.[A-Za-z]\w*)+)(?:\[\d+\])?(?::.*|=.*)?$")


BARE_SOURCE = re.compile(r"^[\w.-]+\.(cpp|hpp|c|h|py|sh|mjs)$")
FENCE_OFF = "<!-- hygiene-docs: off"
FENCE_ON = "<!-- hygiene-docs: on"
LINK_TARGET = re.compile(r"\]\(([^)\s#]+)")


def unfenced_lines(text):
    """(line number, line) outside `<!-- hygiene-docs: off -->` ... `on` fences: a history table
    that names the paths code moved away from is fenced, like a table in a comment is fenced from
    clang-format."""
    fenced = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if FENCE_OFF in line:
            fenced = True
        elif FENCE_ON in line:
            fenced = False
        elif not fenced:
            yield lineno, line


def path_claims(doc, text, top, mods):
    """(line number, token, path relative to ROOT or None when nothing matches, line numbers)
    for each repository path the doc names. A path counts when it starts with a top-level entry
    of the repository or a module of src/ (`store/activate.cpp`, `runtime/startup.*`), and for a
    link target or a bare `name.md` (relative to the doc). Absolute paths and URLs are the
    product's or the web's; `./x` and `../x` outside a link are shell or archive examples."""
    doc_dir = os.path.dirname(doc)
    for lineno, line in unfenced_lines(text):
        links = {m.group(1) for m in LINK_TARGET.finditer(line)}
        for m in PATH_RUN.finditer(line):
            token = m.group(0)
            start = m.start()
            if "://" in token or token.startswith(("/", "~")) or (start and line[start - 1] in "$<{@"):
                continue
            token = token.rstrip(".,:;")
            lines = ()
            lm = LINE_SUFFIX.match(token)
            if lm:
                token = lm.group(1)
                lines = tuple(int(n) for n in lm.groups()[1:] if n)
            first = token.split("/", 1)[0]
            if token in links and not token.startswith(("http", "mailto:")):
                rel = os.path.normpath(os.path.join(doc_dir, token))
            elif token.startswith(("./", "../")):
                continue
            elif "/" in token and first in top:
                rel = token
            elif "/" in token and first in mods:
                rel = os.path.join("src", token)
            elif "/" not in token and token.endswith(".md") and len(token) > 3:
                rel = os.path.normpath(os.path.join(doc_dir, token))
            else:
                continue
            if rel.startswith(".."):
                continue  # outside the repository (../shared/design/)
            yield lineno, token, rel.rstrip("/") or ".", lines


def resolve(rel):
    """The file or directory a claimed path names: itself, or for a stem (`runtime/startup`,
    written `runtime/startup.*`) the files of that stem. None when nothing matches."""
    full = os.path.join(ROOT, rel)
    if os.path.exists(full):
        return full
    parent, stem = os.path.split(full)
    if os.path.isdir(parent) and any(f.startswith(stem + ".") for f in os.listdir(parent)):
        return parent
    return None


def ignored(rel):
    """Paths git ignores (tests/interop/node_modules) exist only after a setup step."""
    return any(subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", p]).returncode == 0
               for p in (rel, rel + "/"))


def check_docs():
    keys = config_keys()
    values = chart_keys()
    points = fault_points()
    sections = {k for k in keys if "." not in k}
    top = set(os.listdir(ROOT)) - {".git", "build"}
    mods = set(modules())
    basenames = {os.path.basename(f) for f in git_files(".")}
    problems = []
    for doc in doc_files():
        text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
        for lineno, token, rel, lines in path_claims(doc, text, top, mods):
            full = resolve(rel)
            if full is None:
                if ignored(rel):
                    continue
                problems.append(f"{doc}:{lineno}: names {token}, which does not exist ({rel})")
                continue
            if lines and os.path.isfile(full):
                n = sum(1 for _ in open(full, encoding="utf-8", errors="replace"))
                for want in lines:
                    if want < 1 or want > n:
                        problems.append(f"{doc}:{lineno}: names {token}:{want}, but {rel} has "
                                        f"{n} lines")
        # A bare source file name (`update_standins.hpp`) names a file somewhere in the tree.
        for lineno, line in unfenced_lines(text):
            for span in CODE_SPAN.findall(line):
                if BARE_SOURCE.match(span) and span not in basenames:
                    problems.append(f"{doc}:{lineno}: names {span}, but no file in the "
                                    f"repository has that name")
        chart_doc = doc.startswith("packaging/")
        claim_sections = sections | ({k for k in values if "." not in k} if chart_doc else set())
        for lineno, line in unfenced_lines(text):
            spans = CODE_SPAN.findall(line) + SET_ARG.findall(line)
            for span in spans:
                m = DOTTED.match(span.strip())
                if not m:
                    continue
                key = m.group(1)
                if key.split(".", 1)[0] not in claim_sections:
                    continue
                if key in keys or key in values:
                    continue
                if FILE_EXT.search(key) or any(p == key or p.startswith(key + ".")
                                               for p in points):
                    continue  # a file name, or a fault point (update.finish.before)
                problems.append(f"{doc}:{lineno}: names config key {key}, which is not a key "
                                f"of updater.yaml (src/config/decode.cpp)"
                                + (" or of the chart's values.yaml" if chart_doc else ""))
    def where(p):
        path, line = p.split(":")[:2]
        return (path, int(line))
    return sorted(problems, key=where)


# --- functions ----------------------------------------------------------------------------------

def check_functions():
    ctags = shutil.which("ctags")
    if not ctags:
        raise Skip("ctags is not installed (Debian package universal-ctags)")
    version = subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        raise Skip(f"{ctags} is not Universal Ctags (Debian package universal-ctags)")
    files = [f for f in git_files("src") if f.endswith(CXX_EXT)]
    out = subprocess.run(
        [ctags, "-x", "--_xformat=%{input}\t%{line}\t%{end}\t%{scope}\t%{name}",
         "--fields=+ne", "--kinds-C++=f", "--kinds-C=f", "--languages=C,C++",
         "--langmap=C++:+.hpp", *files],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    problems = []
    seen = 0
    for row in out.splitlines():
        path, start, end, scope, name = row.split("\t")
        if not end.isdigit():
            continue
        seen += 1
        length = int(end) - int(start) + 1
        limit = next((v for d, v in FUNCTION_LIMIT_BY_DIR.items() if path.startswith(d)),
                     FUNCTION_LIMIT)
        if length > limit:
            qualified = f"{scope}::{name}" if scope and scope != "-" else name
            problems.append(f"{path}:{start}: {qualified} is {length} lines, over the limit of "
                            f"{limit} for {os.path.dirname(path)}/")
    if seen == 0:
        raise RuntimeError("ctags found no function in src/ (has its output format changed?)")
    return problems


CHECKS = {"format": check_format, "includes": check_includes, "docs": check_docs,
          "functions": check_functions}


def main(argv):
    if argv == ["--list-format-files"]:  # for scripts/format.sh: one file set for both
        print("\n".join(format_files()))
        return 0
    log = None
    if "--log" in argv:
        i = argv.index("--log")
        log = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    names = argv or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        print(f"hygiene: unknown check {', '.join(unknown)} (checks: {', '.join(CHECKS)})",
              file=sys.stderr)
        return 2
    records = []
    failed = ran = 0
    for name in names:
        try:
            problems = CHECKS[name]()
            result = "OK" if not problems else "FAIL"
            ran += 1
        except Skip as e:
            problems, result = [str(e)], "SKIP"
        except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
            problems, result = [f"the check itself failed: {e}"], "FAIL"
        head = {"OK": "ok", "FAIL": "FAILED", "SKIP": "skipped"}[result]
        report = "\n".join([f"hygiene {name}: {head}" + (f" ({len(problems)})"
                                                          if result == "FAIL" else "")]
                           + [f"  {p}" for p in problems])
        print(report, flush=True)
        failed += result == "FAIL"
        record = {"name": f"hygiene-{name}", "result": result, "stdout": report + "\n",
                  "command": ["scripts/hygiene.py", name]}
        if problems and result != "OK":
            record["why"] = problems[0] + (f" (and {len(problems) - 1} more)"
                                           if len(problems) > 1 else "")
        records.append(record)
    if log:
        with open(log, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    if failed:
        return 1
    return 0 if ran else 77


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
