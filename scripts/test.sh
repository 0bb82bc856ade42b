#!/usr/bin/env bash
# Runs every test: runs the hygiene gate (scripts/hygiene.py: format, includes, docs, functions);
# builds the static test build (the binary as it ships, with fault injection on)
# and runs the unit and integration suites; builds with ASan/UBSan and runs the unit suite again;
# builds the libFuzzer targets with clang and replays each corpus for a short time; cross-builds
# for arm64 and runs its unit suite and the copy/verify cases under qemu-user. Ends with the
# line `N passed, N failed, N skipped` summed over all stages.
#
#   bash scripts/test.sh                        everything
#   MYR_STAGES="static" bash scripts/test.sh    only some stages (hygiene static asan fuzz arm64)
#   MYR_TEST_STRICT=1 bash scripts/test.sh      a missing prerequisite fails instead of skipping
#                                               (.ci/run sets it: CI installs every prerequisite)
#
# The verdict comes from exit codes and counts, never from words in a log: a stage whose build or
# `meson test` fails, or that runs no test, fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
myr_need_pkgs "${MYR_BUILD_PKGS[@]}" "${MYR_TEST_PKGS[@]}" "${MYR_FUZZ_PKGS[@]}" "${MYR_PACKAGING_PKGS[@]}" \
    "${MYR_HYGIENE_PKGS[@]}" "${MYR_PROMETHEUS_PKGS[@]}" "${MYR_REALNET_PKGS[@]}" "${MYR_BENCH_PKGS[@]}" || exit 1
myr_need_node || exit 1

stages=${MYR_STAGES:-"hygiene static asan fuzz arm64"}
strict=${MYR_TEST_STRICT:-0}
export MYR_TEST_STRICT=$strict
jobs=$(nproc)
logs=()

# Independent peers (npm) for the interop and Sigstore cross-check tests. A failed install is not
# hidden: the tests that need the peers then report a skip (or fail, in strict mode).
if ! myr_need_interop tests/interop; then
    [ "$strict" = 1 ] && logs+=("STAGE-FAILED:setup:npm install in tests/interop failed")
fi

# Packaging suite (tests/integration/packaging): the pinned helm and the chart tests' npm
# packages. Failures here are not hidden either: those tests then fail (helm) or skip (npm).
if ! MYR_HELM=$(myr_need_helm); then
    [ "$strict" = 1 ] && logs+=("STAGE-FAILED:setup:helm could not be installed")
fi
export MYR_HELM
if ! (cd tests/integration/packaging && npm install --no-audit --no-fund --loglevel=error >/tmp/myr-npm-packaging.log 2>&1); then
    echo "npm install in tests/integration/packaging failed:" >&2
    tail -20 /tmp/myr-npm-packaging.log >&2
    [ "$strict" = 1 ] && logs+=("STAGE-FAILED:setup:npm install in tests/integration/packaging failed")
fi

# The real upstream peers for suite `real` (tests/real/build-tools.sh: the OpAMP Supervisor, a
# collector and an opamp-go server from their pinned Go modules, cached under ~/.cache/myriarch;
# a few minutes on a fresh machine, seconds when cached). Without a Go toolchain the suite's cases
# skip (fail in strict mode); a build that fails is a failure in any mode.
real_tools_ok=1
if [[ " $stages " == *" static "* ]]; then
    echo "== setup: real peers (tests/real/build-tools.sh)" >&2
    if real_out=$(bash tests/real/build-tools.sh 2>/tmp/myr-real-tools.log); then
        export MYR_REAL_TOOLS=${real_out##*MYR_REAL_TOOLS=}
        tail -1 /tmp/myr-real-tools.log >&2
    elif [ $? -eq 77 ]; then
        tail -1 /tmp/myr-real-tools.log >&2  # no Go: the cases report their skips themselves
    else
        real_tools_ok=0
        tail -20 /tmp/myr-real-tools.log >&2
        logs+=("STAGE-FAILED:setup:tests/real/build-tools.sh failed: see /tmp/myr-real-tools.log")
    fi
fi

# The Debian rootfs with systemd that suite `host` boots (tests/host/rootfs.sh: mmdebstrap, about
# 2 min and 190 MB once, cached under ~/.cache/myriarch/host-rootfs keyed by its package list).
# When it cannot be built here (no mmdebstrap and no apt) the cases skip (fail in strict mode); a
# build that fails is a failure in any mode.
host_rootfs_ok=1
if [[ " $stages " == *" static "* ]]; then
    echo "== setup: host-mode rootfs (tests/host/rootfs.sh)" >&2
    if host_out=$(bash tests/host/rootfs.sh 2>/tmp/myr-host-rootfs.log); then
        export MYR_HOST_ROOTFS=${host_out##*MYR_HOST_ROOTFS=}
        tail -1 /tmp/myr-host-rootfs.log >&2
    elif [ $? -eq 77 ]; then
        tail -1 /tmp/myr-host-rootfs.log >&2
    else
        host_rootfs_ok=0
        tail -20 /tmp/myr-host-rootfs.log >&2
        logs+=("STAGE-FAILED:setup:tests/host/rootfs.sh failed: see /tmp/myr-host-rootfs.log")
    fi
fi

setup() {  # dir, meson options...
    local dir=$1; shift
    if [ -d "$dir" ]; then
        meson setup --reconfigure "$dir" "$@" >"$dir.setup.log" 2>&1 || meson setup --wipe "$dir" "$@" >"$dir.setup.log" 2>&1
    else
        mkdir -p "$(dirname "$dir")"
        meson setup "$dir" "$@" >"$dir.setup.log" 2>&1
    fi || { cat "$dir.setup.log"; return 1; }
}

# One `meson test` run into its own log (meson-logs/<logbase>.json), removed first so that a stale
# log can never stand in for a run that did not happen.
run_tests() {  # stage, dir, logbase, meson-test args...
    local stage=$1 dir=$2 base=$3; shift 3
    local json="$dir/meson-logs/$base.json"
    rm -f "$json" "$dir/meson-logs/$base.txt"
    echo "== $stage: test ($base)" >&2
    meson test -C "$dir" --logbase "$base" --print-errorlogs "$@" >"$dir.$base.log" 2>&1
    local rc=$?
    grep -E '^ *[0-9]+/[0-9]+ ' "$dir.$base.log" | grep -vE ' OK ' | head -40 >&2
    logs+=("$json")  # summarize.py fails a missing or empty log
    if [ $rc -ne 0 ]; then
        # Failed tests are counted from the log; this line catches what is not in it (a bad
        # argument, an interrupted run).
        grep -qE '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$json" 2>/dev/null ||
            logs+=("STAGE-FAILED:$stage:meson test ($base) exited $rc: see $dir.$base.log")
    fi
}

build() {  # stage, dir
    echo "== $1: build" >&2
    if ! ninja -C "$2" >"$2.build.log" 2>&1; then
        tail -40 "$2.build.log"
        echo "== $1: build FAILED" >&2
        logs+=("BUILD-FAILED:$1")
        return 1
    fi
}

for stage in $stages; do
    case $stage in
        hygiene)
            # Each check is one test in the closing line; a failed one prints `file:line: why`
            # here and names its first problem on its FAILED line. Its log is removed first, as
            # meson's are, so a stale one cannot stand in for this run.
            mkdir -p build
            rm -f build/hygiene.json
            echo "== hygiene: format includes docs functions" >&2
            python3 scripts/hygiene.py --log build/hygiene.json >&2
            rc=$?
            logs+=(build/hygiene.json)
            # 1: a check failed (in the log); 77: every check skipped (in the log as skips).
            case $rc in 0|1|77) ;; *) logs+=("STAGE-FAILED:hygiene:scripts/hygiene.py exited $rc") ;; esac
            ;;
        static)
            setup build/static -Dstatic=true -Dfault_injection=true -Dbuildtype=debugoptimized || { logs+=("BUILD-FAILED:static"); continue; }
            build static build/static || continue
            # Unit and integration tests in parallel; then, alone on the machine, the suites whose
            # assertions are about time (latency, timeouts) and the slow 300 MB ones, so that
            # neither disturbs the other on a 2-core machine.
            run_tests static build/static static-parallel --num-processes "$jobs" --timeout-multiplier 2 \
                --no-suite timing --no-suite slow --no-suite fuzz --no-suite packaging --no-suite real \
                --no-suite host --no-suite budget
            run_tests static build/static static-timing --num-processes 1 --timeout-multiplier 2 \
                --suite timing
            run_tests static build/static static-slow --num-processes 1 --timeout-multiplier 2 \
                --suite slow
            # The real supervisor, collector and opamp-go server (tests/integration/real), alone:
            # their start-up and stop timings are among what the suite measures.
            [ "$real_tools_ok" = 1 ] && run_tests static build/static static-real --num-processes 1 \
                --timeout-multiplier 2 --suite real
            # Host mode under a booted systemd (tests/integration/host), alone: each case boots a
            # machine (about 1 s warm).
            [ "$host_rootfs_ok" = 1 ] && run_tests static build/static static-host --num-processes 1 \
                --timeout-multiplier 2 --suite host
            # The image, the chart and its pod under podman (tests/integration/packaging).
            run_tests static build/static static-packaging --num-processes 1 --timeout-multiplier 2 \
                --suite packaging
            # The footprint budgets (tests/budget/budgets.txt): the amd64 release binary as
            # scripts/release.sh builds it (build/release-amd64, reused between runs), its size and
            # its idle memory as PID 1, alone on the machine.
            echo "== static: release build for the budgets (build/release-amd64)" >&2
            if MYR_ARCHES=amd64 MYR_JOBS=$jobs bash scripts/release.sh >build/release-amd64.log 2>&1; then
                run_tests static build/static static-budget --num-processes 1 --suite budget
            else
                tail -20 build/release-amd64.log
                logs+=("BUILD-FAILED:static (scripts/release.sh amd64 for the budgets)")
            fi
            ;;
        asan)
            setup build/asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug || { logs+=("BUILD-FAILED:asan"); continue; }
            build asan build/asan || continue
            # The unit tests in suite `timing` (unit + timing) run after the others, alone, as in
            # the static stage.
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
                run_tests asan build/asan asan-unit --num-processes "$jobs" --timeout-multiplier 4 \
                --suite unit --no-suite timing
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
                run_tests asan build/asan asan-unit-timing --num-processes 1 --timeout-multiplier 4 \
                --suite timing --no-suite integration --no-suite slow
            ;;
        arm64)
            # The static binary cross-built for aarch64, its unit suite and the integration cases
            # of the commands an init container and a verification run (copy, install-self,
            # verify) under qemu-user with `-cpu max`, so hash/ takes the ARMv8 SHA-2 path
            # (scripts/cross/aarch64-linux-gnu.ini). Left out, because qemu-user cannot run them:
            # - unit-proc, unit-service, unit-stage-preflight, unit-stage-child: the reaper registers
            #   as child subreaper, and qemu-user 7.2 answers prctl(PR_SET_CHILD_SUBREAPER) with
            #   EINVAL;
            # - unit-stage-budget: it bounds a child's peak RSS, and under qemu-user that is the
            #   emulator's (its translation cache and guest mapping), not the stage's;
            # - the fsx cases that start the binary through a host tool (strace, unshare --net,
            #   chroot): without a binfmt_misc entry, which a container cannot register, the tool
            #   cannot exec an aarch64 program (tests/support/harness.cpp wraps only argv[0]);
            # - the container and OpAMP suites: the updater itself starts aarch64 stand-ins.
            # All of them run natively in the static stage.
            myr_need_arm64 || { logs+=("BUILD-FAILED:arm64 (packages)"); continue; }
            setup build/arm64 --cross-file scripts/cross/aarch64-linux-gnu.ini -Dstatic=true \
                -Dfault_injection=true -Dbuildtype=debugoptimized || { logs+=("BUILD-FAILED:arm64"); continue; }
            build arm64 build/arm64 || continue
            mapfile -t arm64_unit < <(meson test -C build/arm64 --no-rebuild --list --suite unit --no-suite timing 2>/dev/null | grep " / " |
                sed 's/.* \/ //' | grep -vxE 'unit-proc|unit-service|unit-stage-preflight|unit-stage-child|unit-stage-budget')
            run_tests arm64 build/arm64 arm64-unit --num-processes "$jobs" --timeout-multiplier 6 \
                "${arm64_unit[@]}"
            # (doctest filters: "?" for a space, since meson splits --test-args at spaces)
            run_tests arm64 build/arm64 arm64-integration --num-processes "$jobs" --timeout-multiplier 6 \
                --test-args='--test-case-exclude=*(strace)*,*directory?fsync?go?through?one?dir?fd*,*(unshare?--net)*,*empty?chroot*' \
                integration-fsx integration-verify
            ;;
        fuzz)
            CC=clang CXX=clang++ setup build/fuzz -Dfuzz=true -Dtests=false -Dbuildtype=debugoptimized || { logs+=("BUILD-FAILED:fuzz"); continue; }
            build fuzz build/fuzz || continue
            run_tests fuzz build/fuzz fuzz --num-processes "$jobs" --suite fuzz
            ;;
        *) echo "unknown stage $stage" >&2; exit 2 ;;
    esac
done

summary_args=()
[ "$strict" = 1 ] && summary_args+=(--strict)
python3 tests/summarize.py "${summary_args[@]}" "${logs[@]}"
