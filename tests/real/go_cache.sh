# Sourced by the scripts that build Go tools for the tests into ~/.cache/myriarch
# (tests/real/build-tools.sh, tests/toxiproxy/build.sh).
#
# myr_go_env WHAT
#   Sets `go` (the toolchain: MYR_GO, go on PATH or /usr/local/go/bin/go) and `cache`
#   (MYR_REAL_CACHE or ~/.cache/myriarch) and the Go environment of a reproducible, offline-first
#   build; without a toolchain, exits 77 saying that WHAT will skip.
myr_go_env() {
    go=${MYR_GO:-$(command -v go || echo /usr/local/go/bin/go)}
    if ! [ -x "$go" ]; then
        echo "no Go toolchain (looked for go on PATH and /usr/local/go/bin/go): $1 will skip" >&2
        exit 77
    fi
    cache=${MYR_REAL_CACHE:-$HOME/.cache/myriarch}
    export GOMODCACHE=$cache/go/mod GOCACHE=$cache/go/build
    export GOFLAGS="-p=${MYR_GO_PROCS:-2} -buildvcs=false -mod=readonly"
    export GOTOOLCHAIN=local CGO_ENABLED=0
}

# myr_go_cached_build LABEL DIR OUT CACHED BUILD
#   Under a lock on DIR/.lock (two test runs at once build once; the second waits and finds the
#   result): when the function CACHED succeeds, nothing is built (MYR_GO_BUILT=0); otherwise the
#   function BUILD is called with a fresh temporary directory, which then becomes OUT
#   (MYR_GO_BUILT=1). BUILD may set `timing` for the line "LABEL: built in OUT (timing)" on
#   stderr. A failed build leaves no OUT and no temporary directory.
myr_go_cached_build() {
    local label=$1 lockdir=$2 out=$3 cached=$4 build=$5
    mkdir -p "$lockdir"
    exec 9>"$lockdir/.lock"
    flock 9
    MYR_GO_BUILT=0
    if "$cached"; then
        echo "$label: cached in $out" >&2
        return 0
    fi
    timing=""
    MYR_GO_TMP=$out.tmp.$$
    rm -rf "$MYR_GO_TMP" && mkdir -p "$MYR_GO_TMP"
    trap 'rm -rf "$MYR_GO_TMP"' EXIT
    "$build" "$MYR_GO_TMP"
    rm -rf "$out" && mv "$MYR_GO_TMP" "$out"
    trap - EXIT
    MYR_GO_BUILT=1
    echo "$label: built in $out ($timing)" >&2
}
