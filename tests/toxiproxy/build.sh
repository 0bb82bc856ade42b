#!/usr/bin/env bash
# Builds Toxiproxy's server (the user-space fault proxy of the bad-link tests; pinned in go.mod)
# and caches it under ~/.cache/myriarch/toxiproxy/<key>/, where <key> hashes the Go version,
# go.mod and go.sum. A cached key is reused without running Go at all.
#
#   bash tests/toxiproxy/build.sh      prints MYR_TOXIPROXY=<path of the server> as its last line
#
# Exit 0: built or cached. Exit 77: no Go toolchain (the tests then skip).
# Exit 1: the build failed; the Go output says why.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../real/go_cache.sh"
myr_go_env "the bad-link tests"

key=$( { "$go" version; cd "$here" && cat go.mod go.sum tools.go; } | sha256sum | cut -c1-16)
out=$cache/toxiproxy/$key
cached() { [ -x "$out/toxiproxy-server" ]; }
build() {
    local t0
    cd "$here"
    t0=$(date +%s)
    nice "$go" mod download
    nice "$go" build -trimpath -o "$1/toxiproxy-server" github.com/Shopify/toxiproxy/v2/cmd/server
    timing="$(($(date +%s) - t0)) s"
}
myr_go_cached_build toxiproxy "$cache/toxiproxy" "$out" cached build
echo "MYR_TOXIPROXY=$out/toxiproxy-server"
