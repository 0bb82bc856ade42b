#!/usr/bin/env bash
# Rewrites the C and C++ files of src/ and tests/ with clang-format and the repo's .clang-format:
# the same files the hygiene gate's `format` check reads (scripts/hygiene.py), so that after this
# the check passes. Tables in comments are fenced (`// clang-format off` ... `on`) so that they
# keep their columns. Prints how many files changed.
#
#   bash scripts/format.sh            rewrite in place
#   bash scripts/format.sh --check    only count the files it would change
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
myr_need_pkgs "${MYR_HYGIENE_PKGS[@]}" || exit 1
mapfile -t files < <(python3 scripts/hygiene.py --list-format-files)
changed=0
for f in "${files[@]}"; do
    if ! clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
        changed=$((changed + 1))
        [ "${1:-}" = --check ] && echo "would change: $f" || clang-format --style=file -i "$f"
    fi
done
if [ "${1:-}" = --check ]; then
    echo "$changed of ${#files[@]} files would change"
else
    echo "$changed of ${#files[@]} files changed"
fi
