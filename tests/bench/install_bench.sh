# Sourced by the benchmarks that time an install through the real binary and the OpAMP test
# server (install.sh, proxy.sh). The caller sets `base` (its work directory) and `pids` (killed by
# its cleanup); `here` is the source tree.

# bench_workdir NAME: sets `base` (BENCH_DIR, else a new /var/tmp/myr-NAME-XXXXXX) and `pids`, and
# traps the exit: every pid in `pids` is killed and `base` removed (kept with KEEP=1).
bench_workdir() {
    base=${BENCH_DIR:-}
    if [ -z "$base" ]; then base=$(mktemp -d "/var/tmp/myr-$1-XXXXXX"); fi
    pids=()
    trap bench_cleanup EXIT INT TERM
}
bench_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ "${KEEP:-0}" = 1 ] || rm -rf "$base"
}

# bench_wait_file FILE WHY: waits up to 20 s for FILE to be non-empty; exits 1 with WHY otherwise.
bench_wait_file() {
    local i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -lt 200 ] || { echo "$(basename "$0"): $2" >&2; exit 1; }
        sleep 0.1
    done
}

# bench_release FAKE_OTELCOL MB VERSION NAME: art/NAME, a tar.gz of fake-otelcol grown to MB by
# random bytes put before its trailer (which must stay last): random bytes do not compress, so the
# archive really is MB. Prints its SHA-256.
bench_release() {
    local d=$base/rel-$4
    mkdir -p "$d" "$base/art"
    cp "$1" "$d/otelcol-contrib"
    local have
    have=$(stat -c %s "$d/otelcol-contrib")
    head -c $(($2 * 1000000 - have)) /dev/urandom >> "$d/otelcol-contrib"
    printf '\n#MYRIARCH-FAKE version=%s health=ok\n' "$3" >> "$d/otelcol-contrib"
    chmod 755 "$d/otelcol-contrib"
    tar czf "$base/art/$4" -C "$d" otelcol-contrib
    rm -rf "$d"
    sha256sum "$base/art/$4" | cut -d' ' -f1
}

# bench_seed FAKE_OTELCOL: $base/seed, the image's collector reporting 0.116.0.
bench_seed() {
    cp "$1" "$base/seed"
    printf '\n#MYRIARCH-FAKE version=0.116.0 health=ok\n' >> "$base/seed"
    chmod 755 "$base/seed"
}

# bench_https_artifacts: serves $base/art over https with $base/pki's certificate (loopback_ca.sh)
# and sets `prefix` to its https://127.0.0.1:PORT/artifacts/.
bench_https_artifacts() {
    python3 "$here/tests/servers/artifact_server.py" --dir "$base/art" --port-file "$base/aport" \
        --tls-cert "$base/pki/server.pem" --tls-key "$base/pki/server.key" --chunk 1048576 \
        > "$base/artifact.log" 2>&1 &
    pids+=($!)
    bench_wait_file "$base/aport" "the artifact server did not start"
    prefix=https://127.0.0.1:$(cat "$base/aport")/artifacts/
}

# bench_offer_and_wait RUN_DIR: appends `release=RUN_DIR/release.txt` to RUN_DIR/cmds (the
# server's --commands file), then waits for the record line (RUN_DIR/rec.jsonl) that reports
# 0.117.0 Installed; prints the seconds in between. The offer is written here, so both ends are
# timed by one clock. Returns 1 on InstallFailed or after 600 s.
bench_offer_and_wait() {
    python3 - "$1" <<'PY'
import json, os, sys, time
d = sys.argv[1]
rec = os.path.join(d, "rec.jsonl")
offset = os.path.getsize(rec)
t0 = time.monotonic()
with open(os.path.join(d, "cmds"), "a") as f:
    f.write("release=%s\n" % os.path.join(d, "release.txt"))
buf = ""
while time.monotonic() - t0 < 600:
    with open(rec) as f:
        f.seek(offset)
        chunk = f.read()
    offset += len(chunk)
    buf += chunk
    *lines, buf = buf.split("\n")
    for line in lines:
        ps = json.loads(line).get("package_statuses") or {}
        for p in ps.get("packages", []):
            if p["status"] == "Installed" and p["agent_has_version"] == "0.117.0":
                print("%.3f" % (time.monotonic() - t0))
                sys.exit(0)
            if p["status"] == "InstallFailed":
                print("InstallFailed: " + p["error_message"], file=sys.stderr)
                sys.exit(1)
    time.sleep(0.005)
print("no Installed within 600 s", file=sys.stderr)
sys.exit(1)
PY
}
