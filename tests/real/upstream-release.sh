#!/usr/bin/env bash
# Prints the upstream OpenTelemetry release the real-peer tests are built from: the version of the
# OpAMP Supervisor module pinned in tests/real/go.mod (v0.149.0 prints 0.149.0). go.mod is the one
# place that pins it; build-tools.sh names its collector builds after it, the chart's default
# supervisor and collector image tags must equal it (packaging-chart-rules checks), and the pod
# test tags its stand-in images with it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
v=$(awk '$1 == "github.com/open-telemetry/opentelemetry-collector-contrib/cmd/opampsupervisor" { print $2 }' \
    "$here/go.mod")
if ! [[ $v =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "upstream-release: no plain vX.Y.Z for cmd/opampsupervisor in $here/go.mod (found '${v}')" >&2
    exit 1
fi
echo "${v#v}"
