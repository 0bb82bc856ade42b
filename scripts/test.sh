#!/usr/bin/env bash
# Runs every test: builds the static test build (the binary as it ships, with fault injection on)
# and runs the unit and integration suites; builds with ASan/UBSan and runs the unit suite again;
# builds the libFuzzer targets with clang and replays each corpus for a short time. Ends with the
# line `N passed, N failed, N skipped` summed over all stages.
#
#   bash scripts/test.sh            everything
#   MYR_STAGES="static" bash scripts/test.sh    only some stages (static asan fuzz)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
myr_need_pkgs "${MYR_BUILD_PKGS[@]}" "${MYR_TEST_PKGS[@]}" "${MYR_FUZZ_PKGS[@]}" || exit 1

stages=${MYR_STAGES:-"static asan fuzz"}
jobs=$(nproc)
logs=()
status=0

# Independent peers (npm) for the interop and Sigstore cross-check tests, when node is present.
if command -v npm >/dev/null && [ -f tests/interop/package.json ]; then
    (cd tests/interop && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
        echo "warning: npm install in tests/interop failed; interop tests will report it" >&2
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

run_stage() {  # name, dir, meson-test args...
    local name=$1 dir=$2; shift 2
    echo "== $name: build" >&2
    if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
        tail -40 "$dir.build.log"
        echo "== $name: build FAILED" >&2
        status=1
        logs+=("BUILD-FAILED:$name")
        return
    fi
    echo "== $name: test" >&2
    meson test -C "$dir" --num-processes "$jobs" --print-errorlogs "$@" >"$dir.test.log" 2>&1
    grep -E '^ *[0-9]+/[0-9]+ ' "$dir.test.log" | grep -vE ' OK |SKIP' | head -40 >&2
    if grep -qE "No (suitable )?tests defined" "$dir.test.log"; then
        echo "== $name: no tests defined in this stage" >&2
        return
    fi
    logs+=("$dir/meson-logs/testlog.json")
}

for stage in $stages; do
    case $stage in
        static)
            setup build/static -Dstatic=true -Dfault_injection=true -Dbuildtype=debugoptimized || { status=1; logs+=("BUILD-FAILED:static"); continue; }
            run_stage static build/static --timeout-multiplier 2
            ;;
        asan)
            setup build/asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug || { status=1; logs+=("BUILD-FAILED:asan"); continue; }
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
                run_stage asan build/asan --suite unit --timeout-multiplier 4
            ;;
        fuzz)
            CC=clang CXX=clang++ setup build/fuzz -Dfuzz=true -Dtests=false -Dbuildtype=debugoptimized || { status=1; logs+=("BUILD-FAILED:fuzz"); continue; }
            run_stage fuzz build/fuzz --suite fuzz
            ;;
        *) echo "unknown stage $stage" >&2; exit 2 ;;
    esac
done

python3 tests/summarize.py "${logs[@]}"
rc=$?
[ $status -eq 0 ] || rc=1
exit $rc
