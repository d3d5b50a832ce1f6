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
SCHEMA=$(mktemp)
trap 'rm -f "${SCHEMA}"' EXIT

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

# The generators load their input by directory (client-gen's --input-base),
# which works only inside the module holding it: apis/ is a module of its own
# (docs/architecture.md, "Modules"), so they run there.
cd "${ROOT}/apis"

kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${ROOT}/apis"

# One OpenAPI package per group: the generic control plane serves
# controlplane.x-k8s.io and must not import the NetworkClaim types, which the
# definitions of one package for both would (test/layering).
kube::codegen::gen_openapi \
    --output-dir "${ROOT}/apis/generated/openapi" \
    --output-pkg "${MODULE}/apis/generated/openapi" \
    --output-model-name-file "zz_generated.model_name.go" \
    --report-filename "${ROOT}/hack/api-rule-violations.list" \
    --update-report \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis/networking"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/apis/controlplane/openapi" \
    --output-pkg "${MODULE}/apis/controlplane/openapi" \
    --output-model-name-file "zz_generated.model_name.go" \
    --report-filename "${ROOT}/hack/api-rule-violations-controlplane.list" \
    --update-report \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis/controlplane"

# models-schema reads the OpenAPI definitions just generated (both packages); it is a command of
# the main module.
(cd "${ROOT}" && go run ./hack/models-schema) >"${SCHEMA}"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-openapi-schema "${SCHEMA}" \
    --output-dir "${ROOT}/client" \
    --output-pkg "${MODULE}/client" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis"
