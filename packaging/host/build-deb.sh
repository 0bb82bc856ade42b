#!/usr/bin/env bash
# Builds the host package myriarch-updater_<version>_<arch>.deb (docs/host-mode.md, "Packaging").
#
#   packaging/host/build-deb.sh OUT_DIR [BINARY]
#
# BINARY defaults to the shipped static binary (scripts/release.sh, dist/myriarch-updater-linux-amd64).
# The version is the binary's own (`myriarch-updater version`), the architecture the binary's
# (amd64 or arm64, read by `file`, so a cross-built arm64 binary gives an arm64 package).
# Deterministic: every file's time is SOURCE_DATE_EPOCH (default: the last commit's time), modes
# and owners are fixed (root:root, --root-owner-group), dpkg-deb sorts the members; two builds of
# one binary give the same bytes. Prints the package's path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: build-deb.sh OUT_DIR [BINARY]}
binary=${2:-}
. "$root/scripts/deps.sh"
myr_need_pkgs dpkg file binutils || exit 1

if [ -z "$binary" ]; then
    (cd "$root" && MYR_ARCHES=amd64 bash scripts/release.sh >&2)
    binary=$root/dist/myriarch-updater-linux-amd64
fi
[ -x "$binary" ] || { echo "build-deb.sh: $binary is not an executable file" >&2; exit 1; }
what=$(file -L "$binary")
case $what in
    *x86-64*) arch=amd64 strip=strip ;;
    *'ARM aarch64'*) arch=arm64 strip=aarch64-linux-gnu-strip ;;
    *) echo "build-deb.sh: $binary is neither an x86-64 nor an aarch64 executable: $what" >&2; exit 1 ;;
esac
# The package has no Depends on a C library: only a static binary may go in.
case $what in
    *'statically linked'* | *'static-pie linked'*) ;;
    *) if [ -z "${MYR_DEB_ALLOW_DYNAMIC:-}" ]; then
           echo "build-deb.sh: $binary is not statically linked: $what" >&2
           echo "  (the tests package their own build with MYR_DEB_ALLOW_DYNAMIC=1)" >&2
           exit 1
       fi ;;
esac
# The binary answers `version` on any architecture the machine can run; an arm64 binary on an
# amd64 machine without qemu cannot, and then the version comes from meson.build.
if ! version=$("$binary" version 2>/dev/null | awk 'NR == 1 {print $NF}') || [ -z "$version" ]; then
    version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$root/meson.build")
fi
case $version in
    [0-9]*) ;;
    *) echo "build-deb.sh: '$version' is not a Debian version (it must start with a digit)" >&2; exit 1 ;;
esac
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
umask 022
put() {  # mode source destination (in the package)
    install -D -m "$1" "$2" "$tree/$3"
}
put 0755 "$binary" usr/bin/myriarch-updater
command -v "$strip" >/dev/null && "$strip" "$tree/usr/bin/myriarch-updater"
put 0644 "$here/myriarch-updater.service" lib/systemd/system/myriarch-updater.service
put 0644 "$here/updater.yaml" etc/myriarch/updater.yaml
docs=usr/share/doc/myriarch-updater
put 0644 "$here/opampsupervisor.service" "$docs/examples/opampsupervisor.service"
put 0644 "$here/opampsupervisor.yaml" "$docs/examples/opampsupervisor.yaml"
put 0644 "$root/docs/host-mode.md" "$docs/host-mode.md"
for s in postinst prerm postrm; do put 0755 "$here/deb/$s" "DEBIAN/$s"; done
put 0644 "$here/deb/conffiles" DEBIAN/conffiles
size=$(du -sk --apparent-size --exclude=DEBIAN "$tree" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
    "$here/deb/control.in" >"$tree/DEBIAN/control"
chmod 0644 "$tree/DEBIAN/control"
find "$tree" -type d -exec chmod 0755 {} +
find "$tree" -exec touch -h -d "@$epoch" {} +

mkdir -p "$out"
deb=$(cd "$out" && pwd)/myriarch-updater_${version}_$arch.deb
SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zxz --build "$tree" "$deb" >/dev/null
echo "$deb"
