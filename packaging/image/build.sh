#!/usr/bin/env bash
# Builds the myriarch-updater image with podman and prints its size.
#
#   packaging/image/build.sh [TAG]                  the shipped binary (scripts/release.sh), then the image
#   packaging/image/build.sh --binary FILE [TAG]    image from an already built static binary
#                                                   (the packaging tests use their own build)
#   packaging/image/build.sh --arch arm64 [TAG]     the linux/arm64 image, from the cross build
#                                                   (or from --binary FILE)
#
# TAG defaults to localhost/myriarch-updater:<version> (with -arm64 appended for arm64). The image
# has no RUN step, so an arm64 image is built here without emulation.
# podman runs with packaging/image/containers.conf unless CONTAINERS_CONF is already set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
. scripts/deps.sh

binary=""
arch=amd64
while [ $# -gt 0 ]; do
    case $1 in
        --binary) binary=${2:?--binary needs a file}; shift 2 ;;
        --arch) arch=${2:?--arch needs amd64 or arm64}; shift 2 ;;
        *) break ;;
    esac
done
case $arch in
    amd64) elf='x86-64' strip=strip suffix='' ;;
    arm64) elf='ARM aarch64' strip=aarch64-linux-gnu-strip suffix='-arm64' ;;
    *) echo "build.sh: unknown arch $arch (amd64 arm64)" >&2; exit 2 ;;
esac
version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" meson.build)
tag=${1:-localhost/myriarch-updater:$version$suffix}

myr_need_pkgs "${MYR_PACKAGING_PKGS[@]}" file || exit 1
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}

if [ -z "$binary" ]; then
    # The shipped binary of that arch: release flags, section GC and LTO (scripts/release.sh).
    MYR_ARCHES=$arch bash scripts/release.sh >&2
    binary=dist/myriarch-updater-linux-$arch
fi

# A FROM scratch image has no loader: refuse anything but a static executable of the image's arch.
if ! file -L "$binary" | grep -q 'statically linked'; then
    echo "build.sh: $binary is not a statically linked executable: $(file -L "$binary")" >&2
    exit 1
fi
if ! file -L "$binary" | grep -q "$elf"; then
    echo "build.sh: $binary is not a $arch executable: $(file -L "$binary")" >&2
    exit 1
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$binary" "$ctx/myriarch-updater"
command -v "$strip" >/dev/null || { echo "build.sh: $strip is not installed (scripts/deps.sh)" >&2; exit 1; }
"$strip" "$ctx/myriarch-updater"
revision=$(git -C "$root" describe --always --dirty=+ 2>/dev/null || echo unknown)
# The source label is a URL people can open: a clone's origin counts only when it is one (CI
# clones from a local path, which would tell a reader of the image nothing).
source_url=${MYR_IMAGE_SOURCE:-$(git -C "$root" config --get remote.origin.url 2>/dev/null || true)}
case $source_url in
    https://* | http://*) ;;
    *) source_url=https://github.com/myriarch/myriarch-updater ;;
esac

echo "== podman build $tag" >&2
# Without --layers=false each LABEL leaves a cached intermediate image behind, dangling.
podman build --quiet --layers=false --arch "$arch" --file "$here/Containerfile" --tag "$tag" \
    --build-arg VERSION="$version" --build-arg REVISION="$revision" \
    --build-arg SOURCE="$source_url" \
    --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$ctx" >/dev/null

size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "$tag ($(podman image inspect --format '{{.Os}}/{{.Architecture}}' "$tag")): $size bytes ($(( (size + 1023) / 1024 )) KiB), binary $(stat -c %s "$ctx/myriarch-updater") bytes stripped"
