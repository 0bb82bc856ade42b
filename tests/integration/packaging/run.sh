#!/usr/bin/env bash
# Runs one packaging test (tests/integration/packaging/meson.build) with what every one of them needs: helm
# (pinned, from the cache that scripts/deps.sh fills; fetched now if the cache is empty) and the
# podman settings of this kind of machine. The test's own exit status is passed on.
#
#   run.sh chart PART          node chart_test.mjs PART
#   run.sh lint                helm lint, plain and --strict, over the example values
#   run.sh image               the updater image: build, labels, user, size
#   run.sh pod                 the chart's pod under podman kube play
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${MYRIARCH_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
. "$src/scripts/deps.sh"

if [ -z "${MYR_HELM:-}" ] || [ ! -x "$MYR_HELM" ]; then
    MYR_HELM=$(myr_need_helm) || { echo "helm could not be installed (see above)"; exit 1; }
fi
export MYR_HELM MYRIARCH_SOURCE_DIR=$src
export CONTAINERS_CONF=${CONTAINERS_CONF:-$src/packaging/image/containers.conf}

what=${1:?usage: run.sh chart PART | lint | image | pod}
shift
case $what in
    chart) exec node "$here/chart_test.mjs" "$@" ;;
    lint) exec bash "$here/lint.sh" "$@" ;;
    image) exec bash "$here/image_test.sh" "$@" ;;
    pod) exec bash "$here/pod_test.sh" "$@" ;;
    *) echo "unknown test $what" >&2; exit 2 ;;
esac
