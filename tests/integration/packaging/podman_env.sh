# Sourced by the podman tests: podman with a configuration and a storage of the test's own, so
# that the machine's images and containers are never touched, and two work trees testing at the
# same time cannot replace each other's images. The storage lives in the user's cache, one per
# source tree (warm images on a second run), not in the build directory: podman keeps its overlay
# directory mounted, which would make `rm -rf build` fail. Its run-time state goes to /run, named
# after it, as podman expects that state to vanish on a reboot.
#
# Exits 77 when not root: rootful podman is what the pod test needs to set the pod's user IDs
# and chown the volumes as a cluster would; CI runs as root.
if [ "$(id -u)" -ne 0 ]; then
    echo "MYR-SKIP: $(basename "$0"): needs root for podman's pod user IDs and volume ownership"
    exit 77
fi
for tool in podman runc; do
    command -v "$tool" >/dev/null || {
        echo "$tool is missing: scripts/test.sh installs it (MYR_PACKAGING_PKGS in scripts/deps.sh)"
        exit 1
    }
done
myr_podman_key=$(printf '%s' "${MYRIARCH_SOURCE_DIR:?}" | sha256sum | cut -c1-12)
myr_podman_dir=${XDG_CACHE_HOME:-$HOME/.cache}/myriarch/podman-$myr_podman_key
myr_podman_run=/run/myriarch-packaging-$myr_podman_key
mkdir -p "$myr_podman_dir" "$myr_podman_run"
cat > "$myr_podman_dir/containers.conf" <<CONF
# Written by tests/integration/packaging/podman_env.sh: the settings of packaging/image/containers.conf, and
# a temporary directory of this storage's own.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
tmp_dir = "$myr_podman_run/libpod"
CONF
cat > "$myr_podman_dir/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$myr_podman_dir/storage"
runroot = "$myr_podman_run/storage"
CONF
export CONTAINERS_CONF=$myr_podman_dir/containers.conf
export CONTAINERS_STORAGE_CONF=$myr_podman_dir/storage.conf
