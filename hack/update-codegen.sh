#!/usr/bin/env bash
# Regenerates deepcopy, conversion, defaults and OpenAPI code for apis/, and
# the clientset, listers, informers and apply configurations under client/,
# with k8s.io/code-generator at the version pinned in go.mod.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=$(go list -m)
CODEGEN_VERSION=$(go list -m -f '{{.Version}}' k8s.io/code-generator)
go mod download "k8s.io/code-generator@${CODEGEN_VERSION}"
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' "k8s.io/code-generator@${CODEGEN_VERSION}")
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${ROOT}/apis"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/apis/generated/openapi" \
    --output-pkg "${MODULE}/apis/generated/openapi" \
    --output-model-name-file "zz_generated.model_name.go" \
    --report-filename "${ROOT}/hack/api-rule-violations.list" \
    --update-report \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-openapi-schema <(go run ./hack/models-schema) \
    --output-dir "${ROOT}/client" \
    --output-pkg "${MODULE}/client" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis"
