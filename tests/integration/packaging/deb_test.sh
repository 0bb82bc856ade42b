#!/usr/bin/env bash
# The host package (packaging/host/build-deb.sh) built from this build's binary: its name and
# version, its files with their modes and owners, the conffile, maintainer scripts that parse,
# the example updater.yaml valid for host mode, and two builds giving the same bytes. What the
# package does on a booted systemd is integration-host's case ("the .deb installs ...").
set -uo pipefail
src=${MYRIARCH_SOURCE_DIR:?}
bin=${MYRIARCH_BIN:?}
tmp=$(mktemp -d /tmp/myriarch-deb-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
    echo "FAIL: $*"
    failed=1
}

version=$("$bin" version | awk 'NR == 1 {print $NF}')
arch=$(dpkg --print-architecture)
export SOURCE_DATE_EPOCH=1700000000
# The test build is not static: the release's is (build-deb.sh refuses a dynamic one otherwise).
deb=$(MYR_DEB_ALLOW_DYNAMIC=1 bash "$src/packaging/host/build-deb.sh" "$tmp/a" "$bin") ||
    { echo "FAIL: build-deb.sh failed"; exit 1; }
[ "$(basename "$deb")" = "myriarch-updater_${version}_$arch.deb" ] ||
    fail "package name $(basename "$deb"), expected myriarch-updater_${version}_$arch.deb"

info=$(dpkg-deb --info "$deb")
for field in "Package: myriarch-updater" "Version: $version" "Architecture: $arch"; do
    grep -qxF " $field" <<<"$info" || fail "control lacks '$field':"$'\n'"$info"
done
[ "$(dpkg-deb --field "$deb" Installed-Size)" -gt 0 ] || fail "no Installed-Size"

# Every file with its mode, owner and time: nothing else in the package.
dpkg-deb --contents "$deb" | awk '$1 !~ /^d/ {print $1, $2, $4, $5, $6}' | sort >"$tmp/contents"
stamp=$(date -u -d @"$SOURCE_DATE_EPOCH" '+%Y-%m-%d %H:%M')
cat >"$tmp/expected" <<LIST
-rw-r--r-- root/root $stamp ./etc/myriarch/updater.yaml
-rw-r--r-- root/root $stamp ./lib/systemd/system/myriarch-updater.service
-rw-r--r-- root/root $stamp ./usr/share/doc/myriarch-updater/examples/opampsupervisor.service
-rw-r--r-- root/root $stamp ./usr/share/doc/myriarch-updater/examples/opampsupervisor.yaml
-rw-r--r-- root/root $stamp ./usr/share/doc/myriarch-updater/host-mode.md
-rwxr-xr-x root/root $stamp ./usr/bin/myriarch-updater
LIST
sort -o "$tmp/expected" "$tmp/expected"
# date -d prints the local time, dpkg-deb too: both under the same TZ.
diff -u "$tmp/expected" "$tmp/contents" || fail "package contents (expected, got) differ"

mkdir "$tmp/control"
dpkg-deb --control "$deb" "$tmp/control"
[ "$(cat "$tmp/control/conffiles")" = /etc/myriarch/updater.yaml ] ||
    fail "conffiles: $(cat "$tmp/control/conffiles")"
for s in postinst prerm postrm; do
    [ "$(stat -c %a "$tmp/control/$s")" = 755 ] || fail "$s mode $(stat -c %a "$tmp/control/$s")"
    sh -n "$tmp/control/$s" || fail "$s does not parse (sh -n)"
done

# The packaged binary is this build's, stripped: it still answers.
mkdir "$tmp/root"
dpkg-deb --extract "$deb" "$tmp/root"
[ "$("$tmp/root/usr/bin/myriarch-updater" version | awk 'NR == 1 {print $NF}')" = "$version" ] ||
    fail "the packaged binary does not answer version $version"

# The shipped updater.yaml is valid for host mode once the files it names exist: here the
# trusted root of tests/data, a CA made here and a token, in a scratch directory.
sed -e "s|/etc/myriarch/trusted_root.json|$src/tests/data/sigstore-conformance/public-good-trusted-root.json|" \
    -e "s|/etc/myriarch/|$tmp/etc/|" "$tmp/root/etc/myriarch/updater.yaml" >"$tmp/updater.yaml"
mkdir "$tmp/etc"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=deb-test-ca \
    -days 1 -keyout "$tmp/etc/ca.key" -out "$tmp/etc/ca.pem" 2>/dev/null || fail "openssl: no CA"
echo token >"$tmp/etc/enrollment-token"
"$bin" validate --config "$tmp/updater.yaml" --mode host >"$tmp/validate.log" 2>&1 ||
    fail "validate --mode host of the shipped updater.yaml:"$'\n'"$(cat "$tmp/validate.log")"

# Deterministic: a second build of the same binary gives the same bytes.
deb2=$(MYR_DEB_ALLOW_DYNAMIC=1 bash "$src/packaging/host/build-deb.sh" "$tmp/b" "$bin") ||
    fail "second build-deb.sh failed"
cmp -s "$deb" "$deb2" || fail "two builds differ: $(sha256sum "$deb" "$deb2")"

[ "$failed" -eq 0 ] || exit 1
echo "ok: $(basename "$deb"), $(stat -c %s "$deb") bytes, $(wc -l <"$tmp/contents") files, reproducible"
