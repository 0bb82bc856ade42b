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
    libyaml-dev libjson-c-dev zlib1g-dev libarchive-dev libprotobuf-c-dev protobuf-c-compiler
    doctest-dev node-llhttp)
MYR_TEST_PKGS=(util-linux strace openssl ca-certificates curl procps e2fsprogs)
MYR_FUZZ_PKGS=(clang libclang-rt-14-dev)

# Node.js and npm run the independent peers of the interop and Sigstore cross-check tests. The
# machine may already have them from elsewhere than Debian (then Debian's npm would conflict), so
# the commands are checked, not the package names.
myr_need_node() {
    command -v node >/dev/null && command -v npm >/dev/null && return 0
    myr_need_pkgs nodejs npm
}
