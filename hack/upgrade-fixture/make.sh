#!/usr/bin/env bash
# Writes the data dir fixture of test/e2e's upgrade test: the state a previous
# release left in its data dir, for the current binary to start on.
#
#   hack/upgrade-fixture/make.sh COMMIT
#
# builds sample-generic-controlplane and kubectl at COMMIT (in a temporary git
# worktree, with that commit's own go.mod pins), starts that binary on a fresh
# data dir, stores objects.yaml and widget.yaml, an owner with a dependent and
# a long-lived TokenRequest token, waits for the controllers' answers (legacy
# token, NetworkClaim decisions), records what the old release returned, stops
# it gracefully and writes
#
#   test/e2e/testdata/upgrade/<kubernetes version of COMMIT>/
#     datadir.tar.gz   the whole data dir: etcd, pki/, admin.kubeconfig
#     expected.json    the stored objects as the old release served them (Lists)
#     token            a TokenRequest token for upgrade/robot, valid 10 years
#     README.md        which commit and command made it
#
# The fixture is committed, not rebuilt by the test: building the previous
# release in every CI run would download and compile a second Kubernetes
# module graph (several minutes, about a gigabyte), and needs the git history
# a shallow clone lacks.
set -euo pipefail

commit=${1:?usage: $0 COMMIT}
root=$(git rev-parse --show-toplevel)
commit=$(git -C "$root" rev-parse --verify "$commit^{commit}")
work=$(mktemp -d)
pid=""

cleanup() {
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
	git -C "$root" worktree remove --force "$work/src" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

git -C "$root" worktree add --detach "$work/src" "$commit" >/dev/null
make -C "$work/src" build kubectl >/dev/null
kube_version=$(cd "$work/src" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(cd "$work/src" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
binary=$work/src/bin/sample-generic-controlplane
kubectl_bin=$work/src/bin/kubectl
out=$root/test/e2e/testdata/upgrade/$kube_version

# A loopback port nothing listens on.
while :; do
	port=$((20000 + RANDOM % 20000))
	(echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
data=$work/data
"$binary" --data-dir="$data" --secure-port="$port" --bind-address=127.0.0.1 >"$work/stdout" 2>"$work/stderr" &
pid=$!
for _ in $(seq 600); do
	grep -q '^  export KUBECONFIG=' "$work/stdout" && break
	kill -0 "$pid" || { cat "$work/stderr"; exit 1; }
	sleep 0.1
done
export KUBECONFIG=$data/admin.kubeconfig
k() { "$kubectl_bin" "$@"; }

here=$root/hack/upgrade-fixture
k apply -f "$here/objects.yaml" >/dev/null
k wait --for=condition=Established crd/widgets.example.com --timeout=60s >/dev/null
k apply -f "$here/widget.yaml" >/dev/null
k -n upgrade patch widget w1 --subresource=status --type=merge -p '{"status":{"phase":"Ready"}}' >/dev/null

# An owner and its dependent: the garbage collector must still find the pair.
k -n upgrade create configmap owner >/dev/null
owner_uid=$(k -n upgrade get configmap owner -o jsonpath='{.metadata.uid}')
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  namespace: upgrade
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: $owner_uid}
EOF

# Wait for the controllers' answers the test compares: the legacy token and
# both NetworkClaims decided for their current generation.
for _ in $(seq 300); do
	token_ready=$(k -n upgrade get secret robot-token -o jsonpath='{.data.token}')
	decided=$(k get networkclaims -o go-template='{{range .items}}{{if eq .metadata.generation (or .status.observedGeneration 0)}}x{{end}}{{end}}')
	[[ -n $token_ready && $decided == xx ]] && break
	sleep 0.1
done
[[ -n $token_ready && $decided == xx ]] || { echo "controllers did not answer in time" >&2; exit 1; }

mkdir -p "$out"
k -n upgrade create token robot --duration=87600h >"$out/token"
# The stored objects as the old release served them: a stream of Lists.
{
	k get namespace/upgrade customresourcedefinition/widgets.example.com -o json
	k -n upgrade get configmaps,secrets,serviceaccounts,roles,rolebindings,widgets -o json
	k get networkclaims -o json
} >"$out/expected.json"

kill -TERM "$pid"
wait "$pid"
pid=""

tar -czf "$out/datadir.tar.gz" --sort=name --owner=0 --group=0 --numeric-owner --exclude=./lock -C "$data" .
cat >"$out/README.md" <<EOF
# Upgrade fixture: a data dir written by Kubernetes $kube_version / etcd $etcd_version

Written by \`hack/upgrade-fixture/make.sh $commit\` on $(date -u +%Y-%m-%d):
sample-generic-controlplane and kubectl built at commit \`$commit\`,
the objects of \`hack/upgrade-fixture/\` stored through them, then a graceful stop.
\`test/e2e/upgrade_test.go\` starts the current binary on \`datadir.tar.gz\` and
checks that everything in \`expected.json\` is there unchanged and that \`token\` still
authenticates.
EOF
echo "wrote $out"
