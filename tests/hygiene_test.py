#!/usr/bin/env python3
"""Tests of scripts/hygiene.py's readers: the gate passes only as long as they still find what
they look for, so each is checked on the real tree (the decoder's keys) or on a small input."""
import os
import sys
import tempfile

from checks import Checks

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
import hygiene  # noqa: E402

checks = Checks("hygiene.py")
expect = checks.expect


keys = hygiene.config_keys()
for key in ("server.endpoint", "update.requireSignature", "update.signerIdentity.subjectRegexp",
            "container.stopTimeout", "collector.binary", "supervisor.storageDir", "log.level"):
    expect(f"the decoder's table yields {key}", key in keys, True)
expect("a key the decoder does not have is not a key", "collector.validateArgs" in keys, False)

with tempfile.TemporaryDirectory() as tmp:
    build = os.path.join(tmp, "meson.build")
    with open(build, "w") as f:
        f.write("# uses hash_dep in a comment only\n"
                "x_deps = [core_dep, fsx_dep]\n"
                "if is_variable('net_dep')\n  x_deps += [get_variable('net_dep')]\nendif\n"
                "stage_dep = declare_dependency(dependencies: x_deps)\n")
    expect("declared modules: named deps, get_variable, not comments, not its own",
           hygiene.declared_modules(build, ["core", "fsx", "net", "hash", "stage"], "stage"),
           {"core", "fsx", "net"})
    with open(build, "w") as f:
        f.write("cli_lib = static_library('c', dependencies: myr_module_deps)\n")
    expect("myr_module_deps declares every module",
           hygiene.declared_modules(build, ["core", "fsx", "cli"], "cli"), {"core", "fsx"})

text = "\n".join([
    "See `src/stage/extract.cpp:12` and store/activate.cpp, [a page](volume.md#rollback).",
    "Not claims: /etc/myriarch/updater.yaml, https://example.com/src/x.cpp, ./token, ../x.",
    "<!-- hygiene-docs: off -->",
    "| `net/random.*` | gone |",
    "<!-- hygiene-docs: on -->",
])
claims = [(line, token, rel, lines) for line, token, rel, lines in
          hygiene.path_claims("docs/stage.md", text, {"src", "docs"}, {"store", "net"})]
expect("path claims: repo paths, module paths, links; not absolute, URLs, ./x, or fenced lines",
       claims,
       [(1, "src/stage/extract.cpp", "src/stage/extract.cpp", (12,)),
        (1, "store/activate.cpp", "src/store/activate.cpp", ()),
        (1, "volume.md", "docs/volume.md", ())])

checks.finish()
