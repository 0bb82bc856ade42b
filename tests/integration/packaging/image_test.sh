#!/usr/bin/env bash
# The updater image: packaging/image/build.sh builds it from the tested static binary; it holds
# only that binary, runs it as 65532:65532 with the binary as entry point, and carries the OCI
# labels. Prints the image size.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/podman_env.sh"
src=$MYRIARCH_SOURCE_DIR
bin=${MYRIARCH_BIN:?}
tag=localhost/myriarch-updater:packaging-test
fail=0
scratch=$(mktemp -d)
# Earlier builds of the same tag leave dangling images behind: drop them on the way out.
trap 'rm -rf "$scratch"; podman image prune -f >/dev/null 2>&1' EXIT
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

out=$(bash "$src/packaging/image/build.sh" --binary "$bin" "$tag" 2>&1) || { echo "$out"; bad "build.sh failed"; exit 1; }
echo "$out" | tail -1

# Labels, user and entry point.
version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$src/meson.build")
inspect() { podman image inspect --format "$1" "$tag"; }
[ "$(inspect '{{.Config.User}}')" = 65532:65532 ] && ok "user 65532:65532" || bad "user is $(inspect '{{.Config.User}}')"
[ "$(inspect '{{json .Config.Entrypoint}}')" = '["/usr/local/bin/myriarch-updater"]' ] && ok "entry point is the binary" ||
    bad "entry point $(inspect '{{json .Config.Entrypoint}}')"
label() { inspect "{{index .Labels \"org.opencontainers.image.$1\"}}"; }
[ "$(label version)" = "$version" ] && ok "label version $version" || bad "label version '$(label version)'"
rev=$(git -C "$src" describe --always --dirty=+ 2>/dev/null || echo unknown)
[ "$(label revision)" = "$rev" ] && ok "label revision $rev" || bad "label revision '$(label revision)', expected $rev"
[[ "$(label source)" == http* ]] && ok "label source $(label source)" || bad "label source '$(label source)'"

# The image's file system is the binary and its directories, nothing else.
root=$(podman image mount "$tag") || { bad "podman image mount"; exit 1; }
files=$(cd "$root" && find . -mindepth 1 | sort | tr '\n' ' ')
[ "$files" = "./usr ./usr/local ./usr/local/bin ./usr/local/bin/myriarch-updater " ] && ok "only /usr/local/bin/myriarch-updater" ||
    bad "image holds: $files"
[ "$(stat -c %a "$root/usr/local/bin/myriarch-updater")" = 755 ] && ok "mode 0755" || bad "mode $(stat -c %a "$root/usr/local/bin/myriarch-updater")"
podman image unmount "$tag" >/dev/null

# It runs, in an empty root, as 65532: install-self writes a file owned by 65532 into a directory
# that 65532 owns, and cannot write into one that only root may write.
if podman run --rm "$tag" version >"$scratch/version.txt" 2>&1; then
    ok "runs: $(head -1 "$scratch/version.txt")"
else
    bad "podman run $tag version: $(cat "$scratch/version.txt")"
fi
mkdir "$scratch/mine" "$scratch/roots"
chown 65532:65532 "$scratch/mine"
if podman run --rm -v "$scratch/mine:/out" "$tag" install-self /out >/dev/null 2>&1 &&
    [ "$(stat -c '%u:%g %a' "$scratch/mine/myriarch-updater")" = "65532:65532 755" ]; then
    ok "install-self as 65532:65532 wrote $(stat -c '%U(%u):%G(%g) %a' "$scratch/mine/myriarch-updater")"
else
    bad "install-self as 65532: $(stat -c '%u:%g %a' "$scratch/mine/myriarch-updater" 2>&1)"
fi
if podman run --rm -v "$scratch/roots:/out" "$tag" install-self /out >/dev/null 2>&1; then
    bad "install-self wrote into a directory only root may write: the image does not run as 65532"
else
    ok "install-self refused by a root-owned directory (not root)"
fi
size=$(podman image inspect --format '{{.Size}}' "$tag")
[ "$size" -lt $((16 * 1024 * 1024)) ] && ok "image size $size bytes" || bad "image size $size bytes (over 16 MiB)"
exit $fail
