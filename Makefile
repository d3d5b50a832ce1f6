# sample-generic-controlplane
#
#   make run    build and start the control plane on its embedded defaults
#   make test   unit, integration and the fast end-to-end specs on the inprocess
#               and binary providers (what CI runs)
#   make e2e    every fuzz target for a bounded time (make fuzz), then the whole
#               end-to-end suite, fault specs included, on every provider:
#               inprocess, binary, external-etcd (3 etcd members, 2 replicas),
#               joined (3 servers whose embedded members joined one etcd cluster)
#               and external (a control plane reached only by its kubeconfig);
#               registry ui in a headless Chromium (make chromium installs it)
#   make robustness
#               recorded client histories under faults (kills, pauses, restarts,
#               compaction, member replacement) on a single server, on three
#               joined ones and on two over an external etcd, checked for linearizability, watch guarantees, the
#               registry's invariants and lost writes (docs/testing.md, "Robustness");
#               ROBUSTNESS_TOPOLOGIES, ROBUSTNESS_FAULTS, ROBUSTNESS_RUNS narrow or lengthen it
#   make fuzz   each fuzz target (API decoding and validation, the allocator's
#               ledger) for FUZZTIME, default 20s (docs/testing.md, "Fuzzing")
#   make verify gofmt, go vet and go mod tidy of every module, generated code up to date
#   make bench  start-up, idle memory, writes, lists, watches and controllers,
#               beside upstream anchors; the test servers beside envtest;
#               NetworkClaim allocation latency, the cost of a pool's figures
#               and the prefix index
#               (docs/performance.md)
#   make release
#               stripped, reproducible binaries for linux and darwin on amd64
#               and arm64 in dist/, with dist/SHA256SUMS
#   make linkdeps
#               why the linker keeps every exported method in the linux/amd64
#               release binary: the chains from main to each function that
#               looks methods up by name (docs/performance.md, "Release build")

SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
BINARY := $(BIN)/sample-generic-controlplane
KUBECTL := $(BIN)/kubectl
SAMPLE_APISERVER := $(BIN)/sample-apiserver
ETCD := $(BIN)/etcd
MODULE := sigs.k8s.io/sample-generic-controlplane
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
# The Kubernetes version the binary reports on /version is the one it is built from.
KUBE_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))
# /version also names the commit the binary is built from, whether the tree had
# changes (as upstream's hack/lib/version.sh: any output of git status, untracked
# files included), and the build date: the commit's time, in UTC, so that the same
# commit always builds the same bytes (make release). SOURCE_DATE_EPOCH, when set,
# overrides it, as reproducible-builds.org asks.
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
GIT_TREE_STATE := $(if $(GIT_COMMIT),$(if $(shell git status --porcelain 2>/dev/null),dirty,clean))
BUILD_DATE := $(if $(SOURCE_DATE_EPOCH),$(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r $(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ),$(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null))
GIT_LDFLAGS := $(if $(GIT_COMMIT),-X k8s.io/component-base/version.gitCommit=$(GIT_COMMIT) \
	-X k8s.io/component-base/version.gitTreeState=$(GIT_TREE_STATE)) \
	$(if $(BUILD_DATE),-X k8s.io/component-base/version.buildDate=$(BUILD_DATE))
LDFLAGS := -X $(MODULE)/controlplane.version=$(VERSION) $(KUBE_LDFLAGS) $(GIT_LDFLAGS)
# Our API types, client and test launcher are modules of their own (docs/architecture.md,
# "Modules"): go ./... in the main module does not reach them.
API_MODULES := apis client testenv
TEST_TIMEOUT ?= 25m
E2E_TIMEOUT ?= 30m
E2E_ARGS ?=
ARGS ?=
BENCH_ARGS ?=

.PHONY: all build kubectl sample-apiserver etcd chromium run test e2e robustness fuzz verify codegen bench release linkdeps clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BINARY) ./cmd/sample-generic-controlplane

# kubectl from the pinned k8s.io/kubernetes module (declared as a tool in go.mod),
# never whatever kubectl happens to be on the machine. Stamped with its version,
# or "kubectl version" fails to parse its own.
kubectl:
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(KUBECTL) k8s.io/kubernetes/cmd/kubectl

# The aggregated API server the end-to-end specs of aggregation run, from the
# pinned k8s.io/sample-apiserver (a tool in go.mod). Stamped like kubectl, or
# its /version says v0.0.0-master+$Format:%H$, which parses as no version.
sample-apiserver:
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(SAMPLE_APISERVER) k8s.io/sample-apiserver

# etcd from the pinned go.etcd.io/etcd/server/v3, for the external-etcd provider.
etcd:
	$(GO) build -o $(ETCD) go.etcd.io/etcd/server/v3

run: build
	$(BINARY) $(ARGS)

# testenv's tests start the binary (SGCP_BINARY): without one they fail, saying how to get one.
test: build kubectl sample-apiserver
	for m in $(API_MODULES); do (cd $$m && SGCP_BINARY=$(BINARY) $(GO) test -timeout $(TEST_TIMEOUT) ./...) || exit 1; done
	SGCP_BINARY=$(BINARY) SGCP_KUBECTL=$(KUBECTL) SGCP_SAMPLE_APISERVER=$(SAMPLE_APISERVER) $(GO) test -timeout $(TEST_TIMEOUT) ./...

# Every spec on every provider that can run it (docs/testing.md). The fault
# specs are behind the e2e build tag; the external provider runs the specs
# against a control plane that hack/e2e-external starts and hands over by
# its kubeconfig alone.
E2E_ENV := SGCP_BINARY=$(BINARY) SGCP_KUBECTL=$(KUBECTL) SGCP_ETCD=$(ETCD) SGCP_SAMPLE_APISERVER=$(SAMPLE_APISERVER)
e2e: build kubectl sample-apiserver etcd chromium fuzz
	$(E2E_ENV) SGCP_E2E_PROVIDERS=inprocess,binary,external-etcd,joined \
		$(GO) test -tags e2e -timeout $(E2E_TIMEOUT) -count=1 ./test/e2e/ $(E2E_ARGS)
	$(E2E_ENV) $(GO) run ./hack/e2e-external -binary $(BINARY) -- \
		$(GO) test -tags e2e -timeout $(E2E_TIMEOUT) -count=1 -run 'Test(Spec|Fault)' ./test/e2e/ $(E2E_ARGS)

# The registry ui spec drives a headless Chromium: Debian's chromium package,
# installed here when it is missing and make runs as root, or the browser
# $SGCP_CHROMIUM names.
chromium:
	@if [ -n "$$SGCP_CHROMIUM" ] || command -v chromium >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium (apt-get) for the registry ui spec"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "make e2e drives a headless Chromium: run sudo apt-get install chromium, or set SGCP_CHROMIUM to a Chromium or Chrome binary" >&2; exit 1; \
	fi

# The fault runs of test/robustness (behind the robustness build tag; its
# checkers' own tests run in make test). A violation names the results
# directory: the history, porcupine's view, the servers' logs, the timeline.
ROBUSTNESS_TIMEOUT ?= 20m
robustness: build etcd
	SGCP_BINARY=$(BINARY) SGCP_ETCD=$(ETCD) $(GO) test -tags robustness -timeout $(ROBUSTNESS_TIMEOUT) -count=1 -v -run TestRobustness ./test/robustness/

# The fuzz targets (docs/testing.md, "Fuzzing"), as module directory,
# package and target: one go test each, since go fuzzes one target at a
# time, in the module the package belongs to. make test runs their corpora
# (testdata/fuzz) as plain tests; an input that fails is written there, to
# commit with its fix.
FUZZTIME ?= 20s
FUZZ_TARGETS := \
	apis:./networking/install:FuzzDecodeNetworkClaim \
	apis:./networking/validation:FuzzValidateNetworkClaim \
	apis:./controlplane/install:FuzzDecodeServiceLocation \
	apis:./controlplane/validation:FuzzValidateServiceLocation \
	.:./controllers/allocation:FuzzLedger

fuzz:
	@for target in $(FUZZ_TARGETS); do \
		IFS=: read -r dir pkg name <<< "$$target"; \
		echo "(cd $$dir && $(GO) test -run '^$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME) $$pkg)"; \
		(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg) || exit 1; \
	done

verify:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	for m in . $(API_MODULES); do (cd $$m && $(GO) vet ./... && $(GO) mod tidy -diff) || exit 1; done
	$(GO) vet -tags e2e ./test/e2e/
	$(GO) vet -tags robustness ./test/robustness/
	./hack/verify-codegen.sh

# Regenerate deepcopy, conversion, defaults, OpenAPI and clients (k8s.io/code-generator, pinned in go.mod).
codegen:
	./hack/update-codegen.sh

# The anchors, built from our module graph: etcd, the upstream generic sample
# and kube-controller-manager with the generic controllers, separate processes;
# for the test servers, controller-runtime's envtest on kube-apiserver and the
# same etcd (docs/performance.md).
bench: build
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/anchor-apiserver k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic
	$(GO) build -o $(BIN)/anchor-etcd go.etcd.io/etcd/server/v3
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/anchor-kcm k8s.io/kubernetes/cmd/kube-controller-manager
	@echo "machine: $$(uname -srm), $$(nproc) CPUs, $$(awk '/MemTotal/ {printf "%.0f GiB", $$2/1048576}' /proc/meminfo); $$($(GO) version)"
	$(GO) run ./hack/bench/startup -binary $(BINARY) -anchor-apiserver $(BIN)/anchor-apiserver \
		-anchor-etcd $(BIN)/anchor-etcd -anchor-kcm $(BIN)/anchor-kcm $(BENCH_ARGS)
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	$(GO) build -o $(BIN)/bench-envtest-inprocess ./hack/bench/envtest/inprocess
	$(GO) run ./hack/bench/envtest -kube-apiserver $(BIN)/kube-apiserver -etcd $(BIN)/anchor-etcd \
		-inprocess $(BIN)/bench-envtest-inprocess -binary $(BINARY)
	$(GO) run ./hack/bench/kubebuilder -kube-apiserver $(BIN)/kube-apiserver -etcd $(BIN)/anchor-etcd -binary $(BINARY)
	$(GO) run ./hack/bench/load -binary $(BINARY) -anchor-apiserver $(BIN)/anchor-apiserver \
		-anchor-etcd $(BIN)/anchor-etcd -anchor-kcm $(BIN)/anchor-kcm
	$(GO) run ./hack/bench/restart -binary $(BINARY)
	$(GO) run ./hack/bench/controllers -binary $(BINARY) -kcm $(BIN)/anchor-kcm
	$(GO) run ./hack/bench/controllers -binary $(BINARY) -kcm $(BIN)/anchor-kcm \
		-kcm-args "--kube-api-qps=1000 --kube-api-burst=2000"
	$(GO) run ./hack/bench/allocation -binary $(BINARY)
	$(GO) test -run '^$$' -bench 'Pool.*Of50k' ./controllers/allocation/
	$(GO) test -run '^$$' -bench BenchmarkUIView -benchmem ./kana/registrycli/
	cd client && $(GO) test -run '^$$' -bench . -benchmem ./networkregistry/prefixindex/

# Release binaries (README, "Release binaries"), one per platform, stamped as
# make build stamps them and stripped (-s -w). Reproducible: the same commit
# built with the same Go release gives the same bytes on any machine, since
# -trimpath leaves out the paths of the checkout and the module cache,
# CGO_ENABLED=0 the C toolchain, and -buildvcs=false git's state (VERSION
# already names the commit, and an untracked file would change the bytes). The
# architecture levels are Go's defaults, named so that a GOAMD64 in someone's
# environment cannot make a release that old CPUs cannot run.
DIST := $(CURDIR)/dist
# linux/amd64 first: its size bound is checked before the others are built.
RELEASE_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
# A ceiling that catches growth: the linux/amd64 binary is 121.8 MB today.
# Issues 14 and 29 asked for under 100 MB; etcd v3.7.0 keeps that out of reach
# (docs/performance.md, "Release build"; make linkdeps shows the chains): two
# reflective calls reachable from the embedded member make the linker keep
# every exported method. With etcd changed and gRPC built with grpcnotrace it
# is 99.4 MB: then lower this to 100000000.
RELEASE_MAX_BYTES := 125000000

release:
	rm -rf $(DIST)
	mkdir -p $(DIST)
	@for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=$(DIST)/sample-generic-controlplane-$(VERSION)-$$os-$$arch; \
		echo "GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=false -o $$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOAMD64=v1 GOARM64=v8.0 \
			$(GO) build -trimpath -buildvcs=false -ldflags "-s -w $(LDFLAGS)" -o $$out \
			./cmd/sample-generic-controlplane || exit 1; \
		if [ $$p = linux/amd64 ]; then \
			size=$$(wc -c < $$out | tr -d ' '); \
			if [ $$size -ge $(RELEASE_MAX_BYTES) ]; then \
				echo "$$out is $$size bytes; the linux/amd64 release binary must stay under $(RELEASE_MAX_BYTES) bytes: find what grew it (make linkdeps, docs/performance.md)" >&2; \
				exit 1; \
			fi; \
			echo "$$out is $$size bytes, under $(RELEASE_MAX_BYTES)"; \
		fi; \
	done
	$(GO) run ./hack/release-checksums $(DIST)

# The release build of linux/amd64 again, its linker printing every symbol it
# keeps and what reached it (-dumpdep, in bin/linkdeps.txt); hack/linkdeps
# prints the chain to each function that makes the linker keep every exported
# method of every reachable type.
linkdeps:
	mkdir -p $(BIN)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOAMD64=v1 \
		$(GO) build -trimpath -buildvcs=false -ldflags "-s -w $(LDFLAGS) -dumpdep" -o /dev/null \
		./cmd/sample-generic-controlplane > $(BIN)/linkdeps.txt 2>&1
	$(GO) run ./hack/linkdeps $(BIN)/linkdeps.txt

clean:
	rm -rf $(BIN) $(DIST)
