#!/usr/bin/env bash
# Fails when the generated code differs from what hack/update-codegen.sh writes.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT

# Regenerate in a copy of the tree, so the working tree is left alone.
cp -a "${ROOT}/." "${TMP}/"
"${TMP}/hack/update-codegen.sh"
for report in api-rule-violations.list api-rule-violations-controlplane.list; do
    if ! diff -u "${ROOT}/hack/${report}" "${TMP}/hack/${report}"; then
        echo "OpenAPI rule violations changed (hack/${report}): fix them, or run hack/update-codegen.sh to accept them" >&2
        exit 1
    fi
done
for dir in apis client; do
    if ! diff -Naupr "${ROOT}/${dir}" "${TMP}/${dir}"; then
        echo "generated code in ${dir}/ is out of date: run hack/update-codegen.sh" >&2
        exit 1
    fi
done
echo "generated code is up to date"
