#!/usr/bin/env bash
# Regenerates deepcopy, conversion, defaults, protobuf and OpenAPI code for
# apis/, and the clientset, listers, informers and apply configurations under
# client/, with k8s.io/code-generator at the version pinned in go.mod. It needs
# nothing but Go: protoc's part in the protobuf generation is played by
# hack/protoc (docs/architecture.md, "Code generation").
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=$(go list -m)
CODEGEN_VERSION=$(go list -m -f '{{.Version}}' k8s.io/code-generator)
go mod download "k8s.io/code-generator@${CODEGEN_VERSION}"
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' "k8s.io/code-generator@${CODEGEN_VERSION}")
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT
SCHEMA="${TMP}/models-schema.json"

# The protobuf tools, built from the versions go.mod pins: go-to-protobuf,
# the protoc-gen-gogo plugin it has protoc run, goimports (which it runs on
# what the plugin wrote), and protoc itself, ours (hack/protoc).
BIN="${TMP}/bin"
go build -o "${BIN}/" \
    k8s.io/code-generator/cmd/go-to-protobuf \
    k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo \
    golang.org/x/tools/cmd/goimports \
    ./hack/protoc
GOGO_DIR=$(go list -m -f '{{.Dir}}' github.com/gogo/protobuf)

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

# The generators load their input by directory (client-gen's --input-base),
# which works only inside the module holding it: apis/ is a module of its own
# (docs/architecture.md, "Modules"), so they run there.
cd "${ROOT}/apis"

kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${ROOT}/apis"

# Protobuf: generated.proto and generated.pb.go of the external versions, and
# the protobuf tags of their types. go-to-protobuf writes each package's
# .proto beside its Go files and runs protoc on it by import path under
# --output-dir, where protoc-gen-gogo's output lands too; so that tree is
# made of links: our module's directory under its path, and the .proto files
# the generated ones import (apimachinery's, which the "-" packages name
# without generating them, and gogo.proto, which the first pass imports).
# What an earlier run generated goes first, so that a package whose doc.go
# no longer asks for protobuf keeps no stale files.
find "${ROOT}/apis" \( -name generated.proto -o -name generated.pb.go \) -type f -delete
PROTO_ROOT="${TMP}/proto"
mkdir -p "${PROTO_ROOT}/${MODULE}" "${PROTO_ROOT}/k8s.io" "${PROTO_ROOT}/github.com/gogo"
ln -s "${ROOT}/apis" "${PROTO_ROOT}/${MODULE}/apis"
ln -s "$(go list -m -f '{{.Dir}}' k8s.io/apimachinery)" "${PROTO_ROOT}/k8s.io/apimachinery"
ln -s "${GOGO_DIR}" "${PROTO_ROOT}/github.com/gogo/protobuf"
PROTO_PACKAGES=()
# The packages whose doc.go asks for it, as upstream's script finds them.
while IFS= read -r doc; do
    PROTO_PACKAGES+=("${MODULE}/$(dirname "${doc}")")
done < <(cd "${ROOT}" && grep -rl --include=doc.go '^// +k8s:protobuf-gen=package' apis | LC_ALL=C sort)
# go-to-protobuf also runs gofmt, which is Go's own.
PATH="${BIN}:$(go env GOROOT)/bin:${PATH}" go-to-protobuf \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${PROTO_ROOT}" \
    --proto-import "${PROTO_ROOT}" \
    --apimachinery-packages "-k8s.io/apimachinery/pkg/util/intstr,-k8s.io/apimachinery/pkg/api/resource,-k8s.io/apimachinery/pkg/runtime/schema,-k8s.io/apimachinery/pkg/runtime,-k8s.io/apimachinery/pkg/apis/meta/v1" \
    --packages "$(IFS=,; echo "${PROTO_PACKAGES[*]}")"

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
    --prefers-protobuf \
    --applyconfig-openapi-schema "${SCHEMA}" \
    --output-dir "${ROOT}/client" \
    --output-pkg "${MODULE}/client" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis"
