#!/usr/bin/env bash
# helm lint, plain and --strict (warnings fail), with the chart's defaults and with each example
# of container mode. Exit 1 on the first failure, with helm's output.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
chart=$MYRIARCH_SOURCE_DIR/packaging/helm/myriarch-collector
root=$here/fixtures/trusted_root.json
fail=0
lint() {  # description, helm lint arguments...
    local what=$1; shift
    local out
    if out=$("$MYR_HELM" lint "$@" 2>&1); then
        echo "ok: helm lint $what"
    else
        echo "FAIL: helm lint $what:"; echo "$out" | sed 's/^/    /'; fail=1
    fi
}
for strict in "" --strict; do
    lint "$strict (defaults)" $strict "$chart"
    lint "$strict (container mode, standard)" $strict "$chart" -f "$here/values/container-standard.yaml" \
        --set-file containerMode.trustedRoot.json="$root"
    lint "$strict (container mode, openshift, verification off)" $strict "$chart" \
        -f "$here/values/container-openshift-noverify.yaml"
    lint "$strict (daemonset)" $strict "$chart" --set mode=daemonset
done
# helm lint runs the templates in lint mode, where `fail` is logged instead of failing (the render
# failures themselves are asserted by packaging-chart-failures); the message must still show.
out=$("$MYR_HELM" lint "$chart" -f "$here/values/container-standard.yaml" 2>&1)
if grep -q 'none was given.*containerMode.requireSignature=false' <<<"$out"; then
    echo "ok: helm lint reports container mode without a trusted root"
else
    echo "FAIL: helm lint said nothing about the missing trusted root:"; echo "$out" | sed 's/^/    /'; fail=1
fi
exit $fail
