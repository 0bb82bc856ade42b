#!/usr/bin/env bash
# The example alerting rules (packaging/prometheus/alerts.yaml) with the Prometheus release they
# are written for: `promtool check rules` (syntax, PromQL, templates) and `promtool test rules`
# (alerts_test.yaml: series in, the alerts that must and must not fire out). promtool comes with
# Debian's prometheus package (MYR_PROMETHEUS_PKGS in scripts/deps.sh); without it the test is
# skipped (exit 77), or fails under MYR_TEST_STRICT=1.
set -uo pipefail
src=${MYRIARCH_SOURCE_DIR:?set by meson}
rules=$src/packaging/prometheus
promtool=${MYR_PROMTOOL:-$(command -v promtool)}
if [ -z "$promtool" ] || [ ! -x "$promtool" ]; then
    why="promtool is not installed (Debian package prometheus, scripts/deps.sh)"
    if [ "${MYR_TEST_STRICT:-0}" = 1 ]; then
        echo "FAIL: $why, and MYR_TEST_STRICT=1 forbids skips"
        exit 1
    fi
    echo "MYR-SKIP: prometheus_rules.sh: $why"
    exit 77
fi
"$promtool" --version 2>&1 | head -1
fail=0
for step in "check rules alerts.yaml" "test rules alerts_test.yaml"; do
    # From the rules' directory, where alerts_test.yaml names alerts.yaml.
    if out=$(cd "$rules" && "$promtool" $step 2>&1); then
        echo "ok: promtool $step"
    else
        echo "FAIL: promtool $step:"; echo "$out" | sed 's/^/    /'; fail=1
    fi
done
exit $fail
