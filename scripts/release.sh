#!/usr/bin/env bash
# Builds the two shipped binaries: stripped, static, release (size flags, section GC and LTO:
# meson.build and docs/footprint.md say why), without fault injection or tests, for linux/amd64
# natively and linux/arm64 with Debian's cross compiler (scripts/cross/aarch64-linux-gnu.ini).
# Writes dist/myriarch-updater-linux-{amd64,arm64} and dist/SHA256SUMS (sha256sum -c format).
#
#   bash scripts/release.sh            both
#   MYR_ARCHES=amd64 bash scripts/release.sh
#
# Run on an amd64 Debian bookworm machine; the packages come from scripts/deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
arches=${MYR_ARCHES:-"amd64 arm64"}
jobs=${MYR_JOBS:-2}
opts=(-Dstatic=true -Dbuildtype=release -Dfault_injection=false -Dtests=false -Db_lto=true)

mkdir -p dist
for arch in $arches; do
    dir=build/release-$arch
    cross=() strip=strip
    case $arch in
        amd64) myr_need_pkgs "${MYR_BUILD_PKGS[@]}" ;;
        arm64)
            myr_need_arm64 || exit 1
            cross=(--cross-file scripts/cross/aarch64-linux-gnu.ini) strip=aarch64-linux-gnu-strip ;;
        *) echo "release.sh: unknown arch $arch (amd64 arm64)" >&2; exit 2 ;;
    esac
    if [ -d "$dir" ]; then
        meson setup --reconfigure "$dir" "${cross[@]}" "${opts[@]}" >/dev/null
    else
        meson setup "$dir" "${cross[@]}" "${opts[@]}" >/dev/null
    fi
    ninja -C "$dir" -j "$jobs" myriarch-updater
    "$strip" -o "dist/myriarch-updater-linux-$arch" "$dir/myriarch-updater"
    echo "dist/myriarch-updater-linux-$arch: $(stat -c %s "dist/myriarch-updater-linux-$arch") bytes"
done
# Every binary in dist/, so that a release of one arch keeps the other's line.
(cd dist && sha256sum myriarch-updater-linux-* > SHA256SUMS && cat SHA256SUMS)
