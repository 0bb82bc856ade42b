#!/usr/bin/env bash
# Builds the Debian bookworm root filesystem that the host-mode tests boot with systemd as PID 1
# (tests/support/systemd_rig.hpp) and caches it as a tarball under ~/.cache/myriarch/host-rootfs/,
# keyed by the suite, the mirror and the package list below: a cached key is reused without running
# mmdebstrap at all. The rootfs is never modified afterwards; each test boots an overlay of it.
#
#   bash tests/host/rootfs.sh     prints MYR_HOST_ROOTFS=<dir> as its last line
#
# <dir> is the tarball unpacked once next to it (about 3 s): the read-only lower layer of each
# test's overlay. The tarball is the cache a CI machine keeps; the tree is made from it on demand.
#
# Exit 0: built or cached. Exit 77: mmdebstrap or systemd-nspawn is missing and cannot be
# installed (the tests then skip, or fail in strict mode). Exit 1: the build failed (its log says
# why, e.g. the mirror is unreachable).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../scripts/deps.sh
. "$here/../../scripts/deps.sh"

suite=bookworm
mirror=${MYR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# systemd as PID 1, dbus for systemctl's bus, and nothing else: the units under test bring their
# own static binaries. minbase keeps apt/dpkg so the .deb test can install into the booted system.
packages=systemd,systemd-sysv,dbus

if ! myr_need_pkgs "${MYR_HOST_PKGS[@]}"; then
    echo "rootfs: cannot install ${MYR_HOST_PKGS[*]}: the host-mode tests will skip" >&2
    exit 77
fi

cache=${MYR_HOST_CACHE:-$HOME/.cache/myriarch}/host-rootfs
key=$(printf '%s\n' "$suite" "$mirror" "$packages" "$(mmdebstrap --version)" | sha256sum | cut -c1-16)
out=$cache/rootfs-$suite-$key.tar
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9  # two test runs at once build once; the second waits and finds the tarball
# Unpacks the tarball into its tree once; prints the tree.
unpacked() {
    local dir=${out%.tar}
    if ! [ -d "$dir" ]; then
        rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
        tar -C "$dir.tmp" -xf "$out" && mv "$dir.tmp" "$dir"
    fi
    echo "MYR_HOST_ROOTFS=$dir"
}

if [ -s "$out" ]; then
    echo "rootfs: cached in $out" >&2
    unpacked
    exit 0
fi

# mmdebstrap picks the format by the name: keep the .tar at the end.
tmp=$cache/.tmp-$$-rootfs.tar
log=$cache/build-$key.log
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
# --mode=root: this runs as root in the test environment (the tests need root for namespaces
# anyway); unshare mode would need subuids. The machine-id is left empty so that systemd makes
# one at each boot (a fresh overlay is a fresh machine).
if ! nice mmdebstrap --mode=root --variant=minbase --include="$packages" \
        --customize-hook='truncate -s 0 "$1/etc/machine-id"' \
        --customize-hook='rm -f "$1/var/lib/dbus/machine-id"' \
        "$suite" "$tmp" "$mirror" >"$log" 2>&1; then
    echo "rootfs: mmdebstrap failed (log $log):" >&2
    tail -20 "$log" >&2
    exit 1
fi
mv "$tmp" "$out"
echo "rootfs: built $out in $(($(date +%s) - t0)) s ($(du -m "$out" | cut -f1) MB)" >&2
unpacked
