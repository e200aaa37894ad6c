# restage-gate. `make demo` and `make test` set up what they need (the wasm32-wasip1 Rust target);
# targets that use kwctl or bats say so when those are missing. Builds say what they build and
# about how long it takes on 2 cores the first time.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

TARGET      := wasm32-wasip1
CARGO       ?= cargo
KWCTL       ?= kwctl
# Cargo's output directory: $CARGO_TARGET_DIR when set, as cargo does.
TARGET_DIR  := $(or $(CARGO_TARGET_DIR),target)
WASM        := $(TARGET_DIR)/$(TARGET)/release/restage_gate.wasm
SOURCES     := $(shell find src -name '*.rs') Cargo.toml Cargo.lock
DEMO        := $(CARGO) run --locked --quiet --profile tools -p restage-gate-demo
RELEASE     := $(CARGO) run --locked --quiet --profile tools -p restage-gate-release --no-default-features --
SIGNING     := $(CARGO) run --locked --quiet --profile tools -p restage-gate-release --
VERSION     := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
# make push REGISTRY=host:port/path pushes $(REGISTRY)/restage-gate:v$(VERSION)
REGISTRY    ?=
IMAGE        = $(REGISTRY)/restage-gate:v$(VERSION)
# A kwctl sources file (insecure_sources, source_authorities) for a registry that speaks plain
# HTTP or has its own certificate authority: kwctl and the release tool both read it.
KWCTL_SOURCES ?=
REGISTRY_HOST  = $(firstword $(subst /, ,$(REGISTRY)))
# The e2e suites evaluate this module.
export RESTAGE_GATE_WASM := $(CURDIR)/policy.wasm

.PHONY: all demo test e2e-tests fmt fmt-check lint clean wasm-target push pull kwctl-sources floor size-check bench bench-instructions profile-functions fuzz fuzz-smoke keys sign verify release-tool signing-tool

all: policy.wasm

wasm-target:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install a Rust toolchain (https://rustup.rs)"; exit 1; }
	@if ! rustc --print target-libdir --target $(TARGET) >/dev/null 2>&1 || \
	    [ ! -d "$$(rustc --print target-libdir --target $(TARGET))" ]; then \
	  command -v rustup >/dev/null || { echo "the $(TARGET) target is missing and rustup is not installed: add the $(TARGET) standard library to your toolchain"; exit 1; }; \
	  rustup target add $(TARGET); \
	fi

policy.wasm: $(SOURCES) | wasm-target
	@echo "== building policy.wasm: the policy for $(TARGET), release profile (about a minute on 2 cores the first time)"
	$(CARGO) build --locked --release --target $(TARGET) -p restage-gate
	cp $(WASM) policy.wasm

# kwctl when it is installed, the project's own annotator (same custom section) otherwise
annotated-policy.wasm: policy.wasm metadata.yml README.md
	@if command -v $(KWCTL) >/dev/null; then \
	  $(KWCTL) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm; \
	else \
	  $(MAKE) --no-print-directory release-tool; \
	  $(RELEASE) annotate policy.wasm metadata.yml README.md annotated-policy.wasm; \
	fi

# restage-gate-release (tools/release: annotate, push, pull, artifacthub, and with its `signing`
# feature keys, sign, verify): no wasm runtime, built with the quick `tools` profile.
release-tool:
	@echo "== building restage-gate-release, the release tool (a minute or two on 2 cores the first time)"
	@$(CARGO) build --locked --quiet --profile tools -p restage-gate-release --no-default-features

signing-tool:
	@echo "== building restage-gate-release with signing (a few minutes on 2 cores the first time)"
	@$(CARGO) build --locked --quiet --profile tools -p restage-gate-release

# Sets $sources to the sources file kwctl gets: KWCTL_SOURCES, or for a loopback REGISTRY
# (127.0.0.0/8, localhost, [::1]: where the release tool uses plain HTTP) one listing it under
# insecure_sources, since kwctl speaks TLS to any other; empty otherwise, and kwctl reads its own
# (~/.config/kubewarden/sources.yaml).
define kwctl_sources
sources='$(KWCTL_SOURCES)'; \
if [ -z "$$sources" ]; then \
  host='$(REGISTRY_HOST)'; name=$$host; \
  if [[ $$host =~ ^(.*):([0-9]*)$$ ]]; then name=$${BASH_REMATCH[1]}; fi; \
  octet='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'; \
  if [ "$$name" = localhost ] || [ "$$name" = '[::1]' ] || [[ $$name =~ ^127\.$$octet\.$$octet\.$$octet$$ ]]; then \
    mkdir -p $(TARGET_DIR)/kwctl-sources; \
    sources=$(TARGET_DIR)/kwctl-sources/$$host.yml; \
    printf 'insecure_sources: ["%s"]\nsource_authorities: {}\n' "$$host" > "$$sources"; \
  fi; \
fi;
endef
# The release tool reads KWCTL_SOURCES when it is given (loopback registries get plain HTTP without).
RELEASE_SOURCES = $(if $(KWCTL_SOURCES),--sources-path '$(KWCTL_SOURCES)')

# The sources file kwctl gets for REGISTRY (written for a loopback one), or nothing.
kwctl-sources:
	@test -n "$(REGISTRY)" || { echo "usage: make kwctl-sources REGISTRY=host:port/path"; exit 1; }
	@$(kwctl_sources) if [ -n "$$sources" ]; then echo "$$sources"; fi

# kwctl push when kwctl is installed, the project's own tool otherwise; either way the last
# line is the immutable reference REGISTRY/restage-gate@sha256:….
push: annotated-policy.wasm
	@test -n "$(REGISTRY)" || { echo "usage: make push REGISTRY=host:port/path [KWCTL_SOURCES=sources.yaml] (pushes REGISTRY/restage-gate:v$(VERSION))"; exit 1; }
	@if command -v $(KWCTL) >/dev/null; then \
	  $(kwctl_sources) \
	  echo "$(KWCTL) push $${sources:+--sources-path $$sources }annotated-policy.wasm registry://$(IMAGE)"; \
	  pushed=$$($(KWCTL) push $${sources:+--sources-path "$$sources"} -o json annotated-policy.wasm registry://$(IMAGE) | \
	    sed -n 's|.*"immutable_ref": *"\(registry://\)\{0,1\}\([^"]*\)".*|\2|p'); \
	  test -n "$$pushed" || { echo "$(KWCTL) push printed no immutable_ref"; exit 1; }; \
	  echo "$$pushed"; \
	else \
	  $(MAKE) --no-print-directory release-tool; \
	  $(RELEASE) check-versions; \
	  $(RELEASE) push annotated-policy.wasm $(IMAGE) $(RELEASE_SOURCES); \
	fi

# kwctl pull when kwctl is installed, the project's own tool otherwise, into pulled-policy.wasm
# once complete.
pull:
	@test -n "$(REGISTRY)" || { echo "usage: make pull REGISTRY=host:port/path [KWCTL_SOURCES=sources.yaml] (pulls REGISTRY/restage-gate:v$(VERSION))"; exit 1; }
	@if command -v $(KWCTL) >/dev/null; then \
	  $(kwctl_sources) \
	  echo "$(KWCTL) pull $${sources:+--sources-path $$sources }-o pulled-policy.wasm registry://$(IMAGE)"; \
	  $(KWCTL) pull $${sources:+--sources-path "$$sources"} -o pulled-policy.partial registry://$(IMAGE) || \
	    { rm -f pulled-policy.partial; exit 1; }; \
	  mv pulled-policy.partial pulled-policy.wasm; \
	  echo "pulled-policy.wasm: pulled $(IMAGE)"; \
	else \
	  $(MAKE) --no-print-directory release-tool; \
	  $(RELEASE) pull $(IMAGE) pulled-policy.wasm $(RELEASE_SOURCES); \
	fi

# cosign key pairs and signatures (COSIGN_PASSWORD from the environment, as cosign reads it).
KEY_DIR           ?=
COSIGN_KEY        ?=
COSIGN_PUBLIC_KEY ?=

keys:
	@test -n "$(KEY_DIR)" || { echo "usage: COSIGN_PASSWORD=… make keys KEY_DIR=DIR (writes DIR/cosign.key, encrypted with COSIGN_PASSWORD, and DIR/cosign.pub)"; exit 1; }
	@$(MAKE) --no-print-directory signing-tool
	$(SIGNING) keys $(KEY_DIR)

sign:
	@test -n "$(REGISTRY)" -a -n "$(COSIGN_KEY)" || { echo "usage: COSIGN_PASSWORD=… make sign REGISTRY=host:port/path COSIGN_KEY=cosign.key (signs REGISTRY/restage-gate:v$(VERSION), by digest)"; exit 1; }
	@$(MAKE) --no-print-directory signing-tool
	$(SIGNING) sign $(IMAGE) $(COSIGN_KEY) $(RELEASE_SOURCES)

verify:
	@test -n "$(REGISTRY)" -a -n "$(COSIGN_PUBLIC_KEY)" || { echo "usage: make verify REGISTRY=host:port/path COSIGN_PUBLIC_KEY=cosign.pub (checks REGISTRY/restage-gate:v$(VERSION))"; exit 1; }
	@$(MAKE) --no-print-directory signing-tool
	$(SIGNING) verify $(IMAGE) $(COSIGN_PUBLIC_KEY) $(RELEASE_SOURCES)

artifacthub-pkg.yml: metadata.yml questions-ui.yml Cargo.toml | release-tool
	$(RELEASE) artifacthub metadata.yml questions-ui.yml "$$(date -u +%Y-%m-%dT%H:%M:%SZ)" artifacthub-pkg.yml > artifacthub-pkg.yml.new
	mv artifacthub-pkg.yml.new artifacthub-pkg.yml

# Each bundled request explained, then decided. kwctl evaluates when it is installed, so no wasm
# host is built; otherwise restage-gate-demo's waPC host on the wasmi interpreter does. Built with
# the unoptimised `tools` profile it is ready in under a minute where wasmtime takes about 25;
# `make test` checks that the two hosts answer alike.
demo: policy.wasm
	@if command -v $(KWCTL) >/dev/null; then \
	  $(MAKE) --no-print-directory annotated-policy.wasm; \
	  echo "== building restage-gate-demo without a wasm host: $(KWCTL) evaluates (about 15 s the first time)"; \
	  $(CARGO) build --locked --profile tools -p restage-gate-demo --no-default-features; \
	  $(DEMO) --no-default-features -- --kwctl $(KWCTL) annotated-policy.wasm e2e-tests/requests; \
	else \
	  echo "== $(KWCTL) is not installed: building restage-gate-demo, a waPC host on the wasmi interpreter (under a minute the first time)"; \
	  $(CARGO) build --locked --profile tools -p restage-gate-demo; \
	  $(DEMO) -- policy.wasm e2e-tests/requests; \
	fi

# The kinds table (src/workload/kinds/mod.rs) and the test kit's descriptors, listed from their
# folders' files; then every list of kinds users read, written from the kinds table:
# the webhook rules of metadata.yml and of the chart's policies, artifacthub-pkg.yml, the chart's
# window job (and its template for each group of custom resources), the lists and commands in
# README.md and docs/install.md, the table of held kinds in docs/design.md, and the uninstall
# commands; then `make manifests` renders the top-level manifests. `make test` fails while one is
# stale (tools/release/src/kind_modules.rs, tools/release/tests/kinds.rs, check-chart).
.PHONY: kinds
kinds: release-tool
	$(RELEASE) kind-modules
	BLESS=1 $(CARGO) test --locked --quiet -p restage-gate-release --test kinds -- --exact every_generated_kind_list_is_the_kinds_tables

# The settings of every ClusterAdmissionPolicy (and AdmissionPolicy) in POLICY, or of the
# chart's policies rendered with the values file VALUES, checked by the module before they reach
# a policy server, which does not start with a policy whose settings the module refuses
# (docs/install.md, "Check settings"). kwctl checks them when it is installed, on its way to
# evaluating a bundled request; otherwise restage-gate-demo's wasmi host does. Other documents
# are skipped.
POLICY ?=
VALUES ?=
.PHONY: check-settings
check-settings: policy.wasm
	@test -n "$(POLICY)$(VALUES)" || { echo "usage: make check-settings POLICY=FILE (checks the settings of every ClusterAdmissionPolicy in FILE) or VALUES=FILE (of the chart's policies with these values)"; exit 1; }
	@policy='$(POLICY)'; \
	if [ -n "$(VALUES)" ]; then \
	  $(call helm_ready,check-settings VALUES=$(VALUES)) \
	  mkdir -p $(TARGET_DIR)/check-settings; policy=$(TARGET_DIR)/check-settings/$$(basename '$(VALUES)'); \
	  $(HELM) template restage-gate $(CHART) --namespace kubewarden --kube-version $(KUBE_RELEASE) --values '$(VALUES)' > "$$policy"; \
	fi; \
	if command -v $(KWCTL) >/dev/null; then \
	  $(MAKE) --no-print-directory annotated-policy.wasm; \
	  $(CARGO) build --locked --quiet --profile tools -p restage-gate-demo --no-default-features; \
	  $(DEMO) --no-default-features -- check-settings --kwctl $(KWCTL) \
	    --request e2e-tests/requests/01-bind.json annotated-policy.wasm "$$policy"; \
	else \
	  echo "== $(KWCTL) is not installed: building restage-gate-demo, a waPC host on the wasmi interpreter (under a minute the first time)"; \
	  $(CARGO) build --locked --quiet --profile tools -p restage-gate-demo; \
	  $(DEMO) -- check-settings policy.wasm "$$policy"; \
	fi

FLOOR_WASM  := $(TARGET_DIR)/$(TARGET)/release/restage_gate_floor.wasm
export RESTAGE_GATE_FLOOR_WASM := $(abspath $(FLOOR_WASM))
SIZE_BUDGET := 1048576

floor: | wasm-target
	$(CARGO) build --locked --release --target $(TARGET) -p restage-gate-floor

# A size budget, not a timing: the module is loaded by every policy-server replica.
size-check: policy.wasm
	@size=$$(stat -c %s policy.wasm); \
	echo "policy.wasm: $$size bytes (budget $(SIZE_BUDGET))"; \
	[ "$$size" -le $(SIZE_BUDGET) ] || { echo "policy.wasm exceeds 1 MiB: find what grew it (cargo bloat, twiggy)"; exit 1; }

# restage-gate against the parse-only floor (its table written into docs/performance.md), then
# the native criterion benches.
bench: policy.wasm annotated-policy.wasm floor
	@echo "policy.wasm: $$(stat -c %s policy.wasm) bytes, annotated-policy.wasm: $$(stat -c %s annotated-policy.wasm) bytes"
	$(CARGO) bench --locked --profile dev -p restage-gate-bench --bench evaluate
	$(CARGO) bench --locked --profile dev -p restage-gate-bench --bench native

# The same cases counted in instructions per call (callgrind): repeatable where wall time is not.
# Its tables go into docs/performance.md.
bench-instructions: policy.wasm floor
	@command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind"; exit 1; }
	$(CARGO) run --locked --profile dev -p restage-gate-bench --bin instructions

# Where the guest's instructions go, by wasm function, on one case of `make bench` (CASE counts
# its table's rows from 0): exclusive instructions per call, from callgrind and wasmtime's perf map.
# Symbols mangled the v0 way name a generic function's type arguments, so one instantiation can
# be told from another (legacy names differ only by a hash); added to the user's own RUSTFLAGS.
CASE ?= 1
profile-functions: | wasm-target
	@command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind"; exit 1; }
	@echo "== building the module with its function names kept (cargo profile 'profiling', v0 symbol names)"
	RUSTFLAGS="$${RUSTFLAGS:+$$RUSTFLAGS }-C symbol-mangling-version=v0" $(CARGO) build --locked --profile profiling --target $(TARGET) -p restage-gate
	$(CARGO) run --locked --profile dev -p restage-gate-bench --bin functions -- $(TARGET_DIR)/$(TARGET)/profiling/restage_gate.wasm $(CASE)

# cargo-fuzz targets (nightly): `make test` runs each for FUZZ_SECONDS without a sanitizer,
# `make fuzz` for longer with AddressSanitizer.
FUZZ_TARGETS := validate_bytes validate_statefulsets validate_settings differential
FUZZ_SECONDS ?= 10
FUZZ_FLAGS   ?= -s none

fuzz-smoke:
	@if ! cargo +nightly --version >/dev/null 2>&1; then \
	  echo "fuzz: SKIPPED, no nightly toolchain (rustup toolchain install nightly)"; exit 0; fi; \
	command -v cargo-fuzz >/dev/null || $(CARGO) install --locked cargo-fuzz; \
	cd fuzz && for t in $(FUZZ_TARGETS); do \
	  mkdir -p corpus/$$t; \
	  cargo +nightly fuzz run $(FUZZ_FLAGS) $$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) 2>&1 | \
	    grep -E '^(Done|==[0-9]+== ERROR)|panicked|^SUMMARY' ; \
	  test "$${PIPESTATUS[0]}" -eq 0 || { echo "fuzz target $$t failed: see fuzz/artifacts/$$t"; exit 1; }; \
	done

fuzz:
	$(MAKE) fuzz-smoke FUZZ_SECONDS=600 FUZZ_FLAGS=

# window-release.yaml, and window-release-GROUP.yaml of each group of custom resources (and,
# after check-chart, the chart's window job rendered for another namespace), against
# the Kubernetes API schemas, strictly (an unknown field fails), with kubernetes-validate from
# PyPI in a virtualenv under the cargo target dir: at the oldest version it supports (its
# ValidatingAdmissionPolicy is GA from 1.30) and the newest the package knows.
# A document whose kind or apiVersion has no schema there fails too (the tool only warns).
KUBERNETES_VALIDATE := 1.37.0
MANIFEST_VENV       := $(TARGET_DIR)/kubernetes-validate-$(KUBERNETES_VALIDATE)
MANIFEST_VERSIONS   := 1.30.0 $(KUBERNETES_VALIDATE)

.PHONY: check-manifests
check-manifests:
	@command -v python3 >/dev/null || { echo "check-manifests: python3 is missing (apt-get install python3 python3-venv)"; exit 1; }
	@if [ ! -x $(MANIFEST_VENV)/bin/kubernetes-validate ]; then \
	  echo "== installing kubernetes-validate $(KUBERNETES_VALIDATE) from PyPI into $(MANIFEST_VENV)"; \
	  python3 -m venv $(MANIFEST_VENV) >/dev/null || { rm -rf $(MANIFEST_VENV); echo "check-manifests: python3 cannot make a virtualenv (apt-get install python3-venv)"; exit 1; }; \
	  $(MANIFEST_VENV)/bin/pip install --quiet --disable-pip-version-check kubernetes-validate==$(KUBERNETES_VALIDATE) || { rm -rf $(MANIFEST_VENV); exit 1; }; \
	fi
	@for k in $(MANIFEST_VERSIONS); do for f in window-release*.yaml $(wildcard $(TARGET_DIR)/chart-manifests/rendered-*.yaml); do \
	  echo "== $$f against the Kubernetes $$k schemas (strict)"; \
	  out=$$($(MANIFEST_VENV)/bin/kubernetes-validate --strict --quiet -k $$k $$f 2>&1) || { echo "$$out"; exit 1; }; \
	  [ -z "$$out" ] || { echo "$$out"; echo "$$f: not every document was checked against Kubernetes $$k"; exit 1; }; \
	done; done

# The real control plane (e2e-tests/control-plane, Go): etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler of the pinned k8s.io/kubernetes in one binary, with
# the node agent, the binding runtime's projector and Kubewarden's stand-in. The binary carries
# the pinned release's version, as the upstream build stamps it.
# go on PATH, or where Go's own installer puts it.
GO                := $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)
CONTROL_PLANE_DIR := e2e-tests/control-plane
CONTROL_PLANE     := $(abspath $(TARGET_DIR))/control-plane/control-plane
WEBHOOK_SERVER    := $(abspath $(TARGET_DIR))/debug/restage-gate-webhook
# `make cluster-up` runs here; `make cluster-down` stops it.
CLUSTER_DIR       ?= $(abspath $(TARGET_DIR))/cluster
define go_missing
echo "$(1): SKIPPED, Go $(GO_NEEDED) or newer is not installed (https://go.dev/doc/install; found: $$($(GO) env GOVERSION 2>/dev/null || echo none))"
endef
# The Go that e2e-tests/control-plane/go.mod asks for, and a shell test that the one found is it.
GO_NEEDED := $(shell sed -n 's/^go //p' $(CONTROL_PLANE_DIR)/go.mod)
define go_usable
( have=$$($(GO) env GOVERSION 2>/dev/null | sed 's/^go//'); \
  [ -n "$$have" ] && [ "$$(printf '%s\n%s\n' '$(GO_NEEDED)' "$$have" | sort -V | head -n 1)" = '$(GO_NEEDED)' ] )
endef

CONTROL_PLANE_SOURCES := $(shell find $(CONTROL_PLANE_DIR) -name '*.go' -not -name '*_test.go') $(CONTROL_PLANE_DIR)/go.mod $(CONTROL_PLANE_DIR)/go.sum

# The Helm chart (charts/restage-gate) and the top-level manifests rendered from it. helm on
# PATH when there is one; otherwise helm.sh/helm/v3 as e2e-tests/control-plane/go.mod pins it
# (its `tool` line), built into the target dir, its offline Kubernetes version (helm template
# without a cluster) the control plane's minor, as helm's own release builds stamp theirs. The top-level files are rendered for the
# Kubernetes release the control plane runs, with the chart's default values: policy.yaml and
# guard.yaml as they are, monitor.yaml with `setup: monitor`, and the window job's files with
# the maintenance window of ci/windows-values.yaml on a cluster that serves every group the
# templates ask for. `make test` fails while one is stale (check-chart).
CHART        := charts/restage-gate
HELM_BUILT   := $(abspath $(TARGET_DIR))/helm/helm
HELM         := $(or $(shell command -v helm 2>/dev/null),$(HELM_BUILT))
KUBE_RELEASE  = $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' $(CONTROL_PLANE_DIR)/go.mod)
CHART_SOURCES := $(shell find $(CHART) -type f)
MANIFESTS    := policy.yaml guard.yaml monitor.yaml $(notdir $(wildcard $(CHART)/templates/window-release*.yaml))
# Every API a template asks the cluster for (.Capabilities.APIVersions.Has), served when the
# window job's files are rendered.
CHART_APIS    = $(sort $(shell sed -n 's/.*APIVersions\.Has "\([^"]*\)".*/\1/p' $(CHART)/templates/*.yaml))

$(HELM_BUILT): $(CONTROL_PLANE_DIR)/go.mod $(CONTROL_PLANE_DIR)/go.sum
	@if ! $(go_usable); then $(call go_missing,helm); exit 1; fi
	@echo "== building helm $$(cd $(CONTROL_PLANE_DIR) && $(GO) list -m -f '{{.Version}}' helm.sh/helm/v3), as $(CONTROL_PLANE_DIR)/go.mod pins it (a minute or two on 2 cores the first time)"
	@minor=$$(echo $(KUBE_RELEASE) | cut -d. -f2); \
	cd $(CONTROL_PLANE_DIR) && $(GO) build -o $(HELM_BUILT) \
	  -ldflags "-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$$minor" \
	  helm.sh/helm/v3/cmd/helm

# Says which helm is used, building it when it is the Go module's; fails, saying what to
# install, when there is no helm and no Go to build it.
define helm_ready
if [ "$(HELM)" != "$(HELM_BUILT)" ]; then echo "== helm on PATH: $(HELM) ($$($(HELM) version --short))"; \
elif $(go_usable); then $(MAKE) --no-print-directory $(HELM_BUILT); echo "== helm: $(HELM_BUILT), built from its Go module"; \
else echo "$(1): helm is not installed and Go $(GO_NEEDED) or newer, which builds it, is not either (https://helm.sh/docs/intro/install/ or https://go.dev/doc/install)"; exit 1; fi;
endef

# Renders the top-level manifests into directory $(1).
define render_manifests
mkdir -p $(1); \
for f in $(MANIFESTS); do \
  case $$f in \
    policy.yaml|guard.yaml) values=();; \
    monitor.yaml) values=(--set setup=monitor);; \
    *) values=(--values $(CHART)/ci/windows-values.yaml $(foreach a,$(CHART_APIS),--api-versions $(a)));; \
  esac; \
  $(HELM) template restage-gate $(CHART) --namespace kubewarden --kube-version $(KUBE_RELEASE) "$${values[@]}" \
    --show-only templates/$$f | sed -e '1{/^---$$/d}' -e '/^# Source: /d' > $(1)/$$f; \
done
endef

.PHONY: manifests check-chart check-chart-run
manifests:
	@$(call helm_ready,manifests)
	@$(call render_manifests,.)
	@echo "rendered from $(CHART) for Kubernetes $(KUBE_RELEASE): $(MANIFESTS)"

# helm lint (with the default values and with windows), then the top-level manifests against
# the chart's rendering; SKIPPED without helm and without Go to build it.
check-chart:
	@if [ "$(HELM)" = "$(HELM_BUILT)" ] && ! $(go_usable); then $(call go_missing,check-chart (helm lint, helm template)); \
	else $(MAKE) --no-print-directory check-chart-run; fi

check-chart-run:
	@$(call helm_ready,check-chart)
	$(HELM) lint --strict $(CHART) --kube-version $(KUBE_RELEASE)
	$(HELM) lint --strict $(CHART) --kube-version $(KUBE_RELEASE) --values $(CHART)/ci/windows-values.yaml
	@rm -rf $(TARGET_DIR)/chart-manifests
	@$(call render_manifests,$(TARGET_DIR)/chart-manifests)
	@stale=; for f in $(MANIFESTS); do \
	  diff -u $$f $(TARGET_DIR)/chart-manifests/$$f || stale="$$stale $$f"; \
	done; \
	[ -z "$$stale" ] || { echo "stale:$$stale: not what $(CHART) renders; run make manifests"; exit 1; }; \
	echo "check-chart: $(MANIFESTS) are what $(CHART) renders"
	@# The window job in another namespace, for check-manifests' schema check.
	@$(HELM) template restage-gate $(CHART) --namespace cattle-kubewarden-system --kube-version $(KUBE_RELEASE) \
	  --values $(CHART)/ci/windows-values.yaml --set kubewardenNamespace=cattle-kubewarden-system \
	  $(foreach a,$(CHART_APIS),--api-versions $(a)) $(foreach f,$(filter window-release%,$(MANIFESTS)),--show-only templates/$(f)) \
	  > $(TARGET_DIR)/chart-manifests/rendered-other-namespace.yaml

.PHONY: control-plane webhook-server test-control-plane cluster-up cluster-down
control-plane: $(CONTROL_PLANE)
$(CONTROL_PLANE): $(CONTROL_PLANE_SOURCES)
	@if ! $(go_usable); then $(call go_missing,control-plane); exit 1; fi
	@k8s=$$(cd $(CONTROL_PLANE_DIR) && $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes); \
	minor=$$(echo $$k8s | cut -d. -f2); \
	echo "== building the control plane from k8s.io/kubernetes $$k8s (8 to 14 minutes on 2 cores the first time, then seconds)"; \
	stamp="-X k8s.io/component-base/version.gitVersion=$$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$$minor \
	  -X k8s.io/client-go/pkg/version.gitVersion=$$k8s -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$$minor"; \
	cd $(CONTROL_PLANE_DIR) && $(GO) build -ldflags "$$stamp" -o $(CONTROL_PLANE) ./cmd/control-plane

webhook-server:
	@echo "== building restage-gate-webhook, the policy server the control plane calls"
	@$(CARGO) build --locked --quiet -p restage-gate-e2e --bin restage-gate-webhook

# Everything of the control-plane module: its unit tests and the scenarios, the window job's as
# the chart renders it with HELM. The scenarios' top-level tests take turns on their control
# plane, each installing its own policies, and spend their time waiting on its controllers; so
# two `go test` runs of them, each with a control plane of its own, share the work: the second
# runs the tests SCENARIOS_APART matches (-run), the first every other (-skip), so each runs
# once; the split balances the two. For the same reason their parallel subtests outnumber the
# machine's cores (-parallel). The second run has a session of its own, so that an interrupt
# of the first stops it too.
# POLICY_SERVER=path/to/policy-server runs them through a real policy-server.
# A real policy-server runs only an annotated module (its metadata names the waPC protocol).
SERVED_MODULE := $(if $(POLICY_SERVER),annotated-policy.wasm,policy.wasm)
SCENARIOS_APART := ^(TestWindowJob|TestDocsInstall|TestDocsUninstall)$$
test-control-plane: $(SERVED_MODULE)
	@if ! $(go_usable); then $(call go_missing,the control-plane scenarios); exit 0; fi; \
	$(MAKE) --no-print-directory control-plane webhook-server; \
	if [ "$(HELM)" = "$(HELM_BUILT)" ]; then $(MAKE) --no-print-directory $(HELM_BUILT); fi; \
	cd $(CONTROL_PLANE_DIR); \
	unformatted=$$("$$(dirname "$$(command -v $(GO))")/gofmt" -l .); [ -z "$$unformatted" ] || { echo "gofmt: not formatted: $$unformatted"; exit 1; }; \
	$(GO) vet ./...; \
	export PATH=$(dir $(GO)):$$PATH CONTROL_PLANE=$(CONTROL_PLANE) RESTAGE_GATE_WEBHOOK=$(WEBHOOK_SERVER) RESTAGE_GATE_WASM=$(CURDIR)/$(SERVED_MODULE) HELM=$(HELM); \
	apart=$(abspath $(TARGET_DIR))/scenarios-apart.log; \
	echo "== the scenarios on two control planes at once; the tests matching $(SCENARIOS_APART) on the second (its output: $$apart)"; \
	setsid -w $(GO) test -count=1 -p 1 -parallel 16 -timeout 30m -run '$(SCENARIOS_APART)' ./scenarios > $$apart 2>&1 & second=$$!; \
	trap 'kill -TERM -- -$$second 2>/dev/null; wait $$second; exit 130' INT TERM HUP; \
	status=0; $(GO) test -count=1 -p 1 -parallel 16 -timeout 30m -skip '$(SCENARIOS_APART)' ./... || status=$$?; \
	wait $$second || status=$$?; \
	sed 's|^|second control plane: |' $$apart; \
	exit $$status

# A playground: the same control plane with restage-gate (policy.yaml, as the README installs it)
# and the binding runtime, in the background. Its last line is the KUBECONFIG for kubectl.
cluster-up: $(SERVED_MODULE)
	@if ! $(go_usable); then $(call go_missing,cluster-up); exit 1; fi
	@$(MAKE) --no-print-directory control-plane webhook-server
	@mkdir -p $(CLUSTER_DIR)
	@echo "== starting the control plane in $(CLUSTER_DIR) (its logs: $(CLUSTER_DIR)/logs)"
	@rm -f $(CLUSTER_DIR)/ready
	@PATH=$(dir $(GO)):$$PATH setsid $(CONTROL_PLANE) up --dir $(CLUSTER_DIR) --wasm $(CURDIR)/$(SERVED_MODULE) --webhook-server $(WEBHOOK_SERVER) \
	  $${POLICY_SERVER:+--policy-server $$POLICY_SERVER} > $(CLUSTER_DIR)/up.log 2>&1 < /dev/null &
	@for i in $$(seq 1 600); do [ -f $(CLUSTER_DIR)/ready ] && break; \
	  if ! pgrep -F $(CLUSTER_DIR)/up.pid >/dev/null 2>&1 && [ $$i -gt 20 ]; then cat $(CLUSTER_DIR)/up.log; exit 1; fi; sleep 0.5; done
	@[ -f $(CLUSTER_DIR)/ready ] || { cat $(CLUSTER_DIR)/up.log; $(CONTROL_PLANE) down --dir $(CLUSTER_DIR); exit 1; }
	@echo "== installing restage-gate as the README does: kubectl apply -f policy.yaml"
	@export PATH=$(CLUSTER_DIR)/bin:$$PATH KUBECONFIG=$(CLUSTER_DIR)/admin.kubeconfig; \
	kubectl apply -f policy.yaml && \
	kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate --timeout=5m || \
	  { $(CONTROL_PLANE) down --dir $(CLUSTER_DIR); exit 1; }
	@echo "kubectl of the cluster's release: $(CLUSTER_DIR)/bin/kubectl"
	@echo "KUBECONFIG=$(CLUSTER_DIR)/admin.kubeconfig"

cluster-down:
	@if [ -x $(CONTROL_PLANE) ]; then $(CONTROL_PLANE) down --dir $(CLUSTER_DIR); else echo "no control plane was built"; fi

test: fmt-check lint policy.wasm floor size-check check-chart check-manifests
	@command -v docker-registry >/dev/null || echo "registry round trip: SKIPPED, docker-registry is not installed (apt-get install docker-registry)"
	@command -v htpasswd >/dev/null || echo "registry login round trip: SKIPPED, htpasswd is not installed (apt-get install apache2-utils)"
	$(CARGO) test --locked --workspace --all-targets 2>&1 | tee $(TARGET_DIR)/test.log
	@$(MAKE) --no-print-directory e2e-tests
	@$(MAKE) --no-print-directory test-control-plane 2>&1 | tee $(TARGET_DIR)/test-control-plane.log
	@$(MAKE) --no-print-directory fuzz-smoke
	@awk '/^test result:/ { p += $$4; f += $$6 } END { printf "tests: %d passed, %d failed\n", p, f }' $(TARGET_DIR)/test.log

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

lint: | wasm-target
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(CARGO) clippy --locked --target $(TARGET) -p restage-gate -- -D warnings

# The same decisions through kwctl, for users who have it (bats + kwctl). `make test` also runs
# the suite on a stand-in that writes kwctl's output streams (e2e-tests/tests/kwctl_stand_in.rs).
e2e-tests: policy.wasm annotated-policy-if-kwctl
	@if ! command -v $(KWCTL) >/dev/null; then \
	  echo "e2e-tests/*.bats: SKIPPED, kwctl is not installed (the Rust e2e suites above ran the module, and this suite on a kwctl stand-in)"; \
	elif ! command -v bats >/dev/null || ! command -v jq >/dev/null; then \
	  echo "e2e-tests/*.bats: SKIPPED, bats and jq are needed (apt-get install bats jq)"; \
	else \
	  KWCTL=$(KWCTL) bats e2e-tests/*.bats; \
	fi

.PHONY: annotated-policy-if-kwctl
annotated-policy-if-kwctl:
	@if command -v $(KWCTL) >/dev/null; then $(MAKE) --no-print-directory annotated-policy.wasm; fi

clean:
	$(CARGO) clean
	rm -f policy.wasm annotated-policy.wasm pulled-policy.wasm pulled-policy.partial
