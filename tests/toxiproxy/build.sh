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
go=${MYR_GO:-$(command -v go || echo /usr/local/go/bin/go)}
if ! [ -x "$go" ]; then
    echo "toxiproxy: no Go toolchain (looked for go on PATH and /usr/local/go/bin/go): the bad-link tests will skip" >&2
    exit 77
fi
cache=${MYR_REAL_CACHE:-$HOME/.cache/myriarch}
export GOMODCACHE=$cache/go/mod GOCACHE=$cache/go/build GOFLAGS="-p=${MYR_GO_PROCS:-2} -buildvcs=false -mod=readonly"
export GOTOOLCHAIN=local CGO_ENABLED=0

key=$( { "$go" version; cd "$here" && cat go.mod go.sum tools.go; } | sha256sum | cut -c1-16)
out=$cache/toxiproxy/$key
mkdir -p "$cache/toxiproxy"
exec 9>"$cache/toxiproxy/.lock"
flock 9  # two test runs at once build once; the second waits and finds the result
if [ -x "$out/toxiproxy-server" ]; then
    echo "toxiproxy: cached in $out" >&2
    echo "MYR_TOXIPROXY=$out/toxiproxy-server"
    exit 0
fi
tmp=$out.tmp.$$
rm -rf "$tmp" && mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
cd "$here"
t0=$(date +%s)
nice "$go" mod download
nice "$go" build -trimpath -o "$tmp/toxiproxy-server" github.com/Shopify/toxiproxy/v2/cmd/server
rm -rf "$out" && mv "$tmp" "$out"
trap - EXIT
echo "toxiproxy: built in $out ($(($(date +%s) - t0)) s)" >&2
echo "MYR_TOXIPROXY=$out/toxiproxy-server"
