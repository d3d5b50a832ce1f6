#!/usr/bin/env bash
# Prints the require and replace directives that a module importing
# sigs.k8s.io/sample-generic-controlplane (controlplane, controlplane/testing)
# pastes into its go.mod, then completes with go mod tidy:
#
#   hack/print-replaces.sh [CHECKOUT]
#
# That module builds k8s.io/kubernetes, which requires its staging modules
# (k8s.io/apiextensions-apiserver, …) as v0.0.0: it needs the same replace
# lines as our go.mod, printed from it, so they follow every upgrade. Our own
# three modules are replaced with CHECKOUT, the directory of a checkout of this
# repository: absolute, or relative to the consumer's go.mod (./… or ../…);
# by default the checkout this script is in.
#
# Programs that import only our API types or client (apis/..., client/...)
# need none of this: a require of the client module is enough.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHECKOUT=${1:-${ROOT}}
case "${CHECKOUT}" in
/* | ./* | ../*) ;;
*)
    echo "print-replaces.sh: ${CHECKOUT}: write the checkout as an absolute path or one starting with ./ or ../, as go.mod wants" >&2
    exit 2
    ;;
esac
CHECKOUT=${CHECKOUT%/}

# go mod edit -print writes our go.mod in its canonical form, without loading
# a package or the module graph.
GOMOD=$(cd "${ROOT}" && GOWORK=off go mod edit -print)
MODULE=$(awk '$1 == "module" { print $2; exit }' <<<"${GOMOD}")
# Until a release is tagged, our modules exist only as a checkout; this is
# the version go gives a replaced module nobody tagged.
PLACEHOLDER=v0.0.0-00010101000000-000000000000

cat <<EOF
// Printed by hack/print-replaces.sh of ${MODULE}.
require ${MODULE} ${PLACEHOLDER}

// k8s.io/kubernetes refers to its staging modules as v0.0.0: pin each to its release.
replace (
EOF
# Every replace of a k8s.io module by a released version, in a block or on a
# line of its own.
awk '
    { sub(/[[:space:]]*\/\/.*/, ""); line = block }
    $1 == "replace" && $2 == "(" { block = 1; next }
    block && $1 == ")" { block = 0; next }
    !block && $1 == "replace" { $1 = ""; $0 = $0; line = 1 }
    line && NF == 4 && $1 ~ /^k8s\.io\// && $2 == "=>" { printf "\t%s => %s %s\n", $1, $3, $4 }
' <<<"${GOMOD}"
cat <<EOF

	${MODULE} => ${CHECKOUT}
	${MODULE}/apis => ${CHECKOUT}/apis
	${MODULE}/client => ${CHECKOUT}/client
	${MODULE}/testenv => ${CHECKOUT}/testenv
)
EOF
