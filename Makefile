# sample-generic-controlplane
#
#   make run    build and start the control plane on its embedded defaults
#   make test   unit, integration and end-to-end tests (what CI runs)
#   make e2e    the end-to-end suite with its fault specs, on external etcd too
#   make verify gofmt, go vet and go mod tidy of every module, generated code up to date
#   make bench  start-up, idle memory and controllers, beside upstream anchors;
#               NetworkClaim allocation latency and the prefix index

SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
BINARY := $(BIN)/sample-generic-controlplane
KUBECTL := $(BIN)/kubectl
MODULE := sigs.k8s.io/sample-generic-controlplane
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
# The Kubernetes version the binary reports on /version is the one it is built from.
KUBE_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))
LDFLAGS := -X $(MODULE)/controlplane.version=$(VERSION) $(KUBE_LDFLAGS)
# Our API types and client are modules of their own (docs/architecture.md,
# "Modules"): go ./... in the main module does not reach them.
API_MODULES := apis client
TEST_TIMEOUT ?= 25m
ARGS ?=
BENCH_ARGS ?=
E2E_ARGS ?=

.PHONY: all build kubectl run test e2e verify codegen bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BINARY) ./cmd/sample-generic-controlplane

# kubectl from the pinned k8s.io/kubernetes module (declared as a tool in go.mod),
# never whatever kubectl happens to be on the machine. Stamped with its version,
# or "kubectl version" fails to parse its own.
kubectl:
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(KUBECTL) k8s.io/kubernetes/cmd/kubectl

run: build
	$(BINARY) $(ARGS)

test: build kubectl
	for m in $(API_MODULES); do (cd $$m && $(GO) test -timeout $(TEST_TIMEOUT) ./...) || exit 1; done
	SGCP_BINARY=$(BINARY) SGCP_KUBECTL=$(KUBECTL) $(GO) test -timeout $(TEST_TIMEOUT) ./...

# The end-to-end suite with the fault specs (build tag e2e: SIGKILL under load,
# quorum loss, failover of replicas), which take minutes, on the providers that
# need nothing but this module and an etcd built from it. E2E_ARGS is passed to
# go test, e.g. E2E_ARGS='-run TestFault -v'.
e2e: build kubectl
	$(GO) build -o $(BIN)/etcd go.etcd.io/etcd/server/v3
	SGCP_BINARY=$(BINARY) SGCP_KUBECTL=$(KUBECTL) SGCP_ETCD=$(BIN)/etcd \
		SGCP_E2E_PROVIDERS=$${SGCP_E2E_PROVIDERS:-inprocess,binary,external-etcd} \
		$(GO) test -tags e2e -timeout $(TEST_TIMEOUT) $(E2E_ARGS) ./test/e2e

verify:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	for m in . $(API_MODULES); do (cd $$m && $(GO) vet ./... && $(GO) mod tidy -diff) || exit 1; done
	$(GO) vet -tags e2e ./test/e2e
	./hack/verify-codegen.sh

# Regenerate deepcopy, conversion, defaults, OpenAPI and clients (k8s.io/code-generator, pinned in go.mod).
codegen:
	./hack/update-codegen.sh

# The anchors, built from our module graph: the upstream generic sample and etcd
# for start-up and memory, kube-controller-manager for the controllers.
bench: build
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/anchor-apiserver k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic
	$(GO) build -o $(BIN)/anchor-etcd go.etcd.io/etcd/server/v3
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/anchor-kcm k8s.io/kubernetes/cmd/kube-controller-manager
	$(GO) run ./hack/bench/startup -binary $(BINARY) \
		-anchor-apiserver $(BIN)/anchor-apiserver -anchor-etcd $(BIN)/anchor-etcd $(BENCH_ARGS)
	$(GO) run ./hack/bench/controllers -binary $(BINARY) -kcm $(BIN)/anchor-kcm
	$(GO) run ./hack/bench/controllers -binary $(BINARY) -kcm $(BIN)/anchor-kcm \
		-kcm-args "--kube-api-qps=1000 --kube-api-burst=2000"
	$(GO) run ./hack/bench/allocation -binary $(BINARY)
	cd client && $(GO) test -run '^$$' -bench . -benchmem ./networkregistry/prefixindex/

clean:
	rm -rf $(BIN)
