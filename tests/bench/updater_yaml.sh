# Sourced by the benchmarks that write an updater.yaml (fleet.sh, install.sh, metrics.sh, probes.sh).
# bench_updater_yaml DIR ENDPOINT PREFIX SEED SUPERVISOR HEALTH_INTERVAL HEALTH_LISTEN EXTRA...
# writes DIR/updater.yaml: an unsigned install from PREFIX, the stand-in supervisor SUPERVISOR
# starting DIR/install/current/otelcol-contrib, no collector or supervisor health URL (the
# stand-ins have none), probes on HEALTH_LISTEN ("" for none). Each EXTRA is `section: line`, a
# line added under that section (e.g. "server: caFile: /x/ca.pem", "update: startJitter: 5s").
bench_updater_yaml() {
    local d=$1 endpoint=$2 prefix=$3 seed=$4 supervisor=$5 interval=$6 listen=$7
    shift 7
    extra() {  # section: the EXTRA lines for it, indented
        local e
        for e in "${extras[@]}"; do
            [ "${e%%: *}" = "$1" ] && printf '  %s\n' "${e#*: }"
        done
        return 0
    }
    local extras=("$@")
    {
        printf 'server:\n  endpoint: %s\n' "$endpoint"
        extra server
        printf 'update:\n  requireSignature: false\n  allowedDownloadPrefixes: ["%s"]\n' "$prefix"
        extra update
        printf '  healthTimeout: 60s\n  healthSuccesses: 1\n  healthInterval: %s\n' "$interval"
        printf 'collector:\n  installDir: %s/install\n  stateDir: %s/state\n' "$d" "$d"
        printf '  healthUrl: ""\n  configFile: %s/effective.yaml\n' "$d"
        printf 'supervisor:\n  storageDir: %s/storage\n  healthUrl: ""\n' "$d"
        printf 'container:\n  supervisorCommand: ["%s", "--storage-dir", "%s/storage", "--agent", "%s/install/current/otelcol-contrib"]\n' \
            "$supervisor" "$d" "$d"
        printf '  seedBinary: %s\n  stopTimeout: 5s\n  healthListen: "%s"\n' "$seed" "$listen"
    } > "$d/updater.yaml"
}

# bench_idle_updater_yaml DIR SEED PORT writes DIR/updater.yaml for an updater that only idles:
# no reachable fleet server, `sleep` as its supervisor, probes (and /metrics) on 127.0.0.1:PORT.
bench_idle_updater_yaml() {
    local d=$1 seed=$2 port=$3
    {
        printf 'server:\n  endpoint: ws://127.0.0.1:1/v1/opamp\n'
        printf 'update:\n  requireSignature: false\n'
        printf 'collector:\n  installDir: %s/install\n  stateDir: %s/state\n' "$d" "$d"
        printf 'log:\n  level: warn\n'
        printf 'container:\n  supervisorCommand: ["/bin/sleep", "3600"]\n'
        printf '  seedBinary: %s\n  healthListen: "127.0.0.1:%s"\n' "$seed" "$port"
    } > "$d/updater.yaml"
}
