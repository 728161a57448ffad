# Ferric build, test and lint entry points. The module list comes from
# go.work only, so adding a module there is enough for every target below.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

MODULES := $(shell sed -n 's|^[[:space:]]*\(use[[:space:]]*\)\{0,1\}\./\([^[:space:]]*\).*|\2|p' go.work)
UNIT_MODULES := $(filter-out tests,$(MODULES))
# Every cmd/<name>/main.go is a binary.
BINARIES := $(notdir $(patsubst %/main.go,%,$(wildcard cmd/*/main.go)))

# -trimpath keeps the checkout's path out of what the go command compiles,
# so a fresh clone (CI's) reuses the build cache another checkout filled
# instead of compiling every package again; binaries are reproducible too.
export GOFLAGS ?= -buildvcs=false -trimpath

# The race detector roughly doubles unit-test time; set RACE= to skip it.
RACE ?= -race
UNIT_TIMEOUT ?= 15m
E2E_TIMEOUT ?= 20m

.PHONY: build run test unit e2e bench lint lint-tool setup lab fuzz images

build:
	@mkdir -p bin
	cd cmd && go build -o ../bin/ $(addprefix ./,$(BINARIES))

# Image tarballs (bin/images/<name>.tar) of the binaries the Helm chart
# runs, built static and reproducibly (-trimpath, no build id), without a
# container engine. IMAGE_ARGS passes more flags to ferric-image, e.g.
# -ca-bundle /etc/ssl/certs/ca-certificates.crt or -base conductor-base.tar.
IMAGE_TAG ?= 0.1.0
IMAGE_ARGS ?=

images:
	@mkdir -p bin/static bin/images
	cd cmd && CGO_ENABLED=0 go build -trimpath -ldflags=-buildid= -o ../bin/static/ ./ferric ./ferric-api ./ferric-conductor
	cd images && go run ./cmd/ferric-image -bin-dir ../bin/static -out-dir ../bin/images -version $(IMAGE_TAG) $(IMAGE_ARGS)

# ferric serve creates ./var for its SQLite file itself.
run: build
	./bin/ferric serve

setup: lint-tool
	./scripts/setup.sh

# Unit and end-to-end suites both run even when the first fails, so one
# run reports every failure.
test: setup
	@status=0; \
	$(MAKE) --no-print-directory unit || status=1; \
	$(MAKE) --no-print-directory e2e || status=1; \
	exit $$status

# -count=1: the suites talk to MariaDB and RabbitMQ, whose state the test
# cache cannot see, so every run really runs them. One go test over every
# module keeps both cores busy while the longest packages run; those are
# named first so that they start first.
UNIT_FIRST := conductor api-service images
UNIT_PATTERNS := $(addsuffix /...,$(addprefix ./,$(UNIT_FIRST) $(filter-out $(UNIT_FIRST),$(UNIT_MODULES))))

unit:
	go test $(RACE) -count=1 -timeout $(UNIT_TIMEOUT) $(UNIT_PATTERNS)

# End-to-end suites share one RabbitMQ that the resilience suite restarts,
# so their packages run one at a time (-p 1); -count=1 because the binaries
# they exercise are built at run time, outside the test cache's view.
e2e:
	cd tests && go test -p 1 -count=1 -timeout $(E2E_TIMEOUT) ./...

# The virtual lab: LAB_NODES simulated nodes (ipmi_sim BMC, disk file,
# ferric-agent booted from PXE configs) with ferric-api and ferric-conductor
# over RabbitMQ and MySQL, until Ctrl-C. LAB_ARGS="-mode callback" makes
# the nodes call back like the bash ramdisk; LAB_ARGS="-bmc ilo" (or
# redfish, plus -swift) gives them a simulated iLO that boots the ramdisk
# from virtual media. Built, then run, not `go run`: go run exits 1
# whenever it is interrupted, whereas ferric-lab exits 0 after a clean stop
# on Ctrl-C (tests/lab/cmd/ferric-lab checks it). make, which gets the
# Ctrl-C too, still ends with "make: *** [Makefile:NN: lab] Interrupt" and
# exits 130 whatever the recipe returned: that is make's own report.
LAB_NODES ?= 2
LAB_ARGS ?=

lab: setup
	@mkdir -p bin
	cd tests && go build -o ../bin/ferric-lab ./lab/cmd/ferric-lab
	cd tests && ../bin/ferric-lab -nodes $(LAB_NODES) $(LAB_ARGS)

# Each Fuzz* function of every module is fuzzed for FUZZTIME (go test runs
# only their seed corpora, as plain tests). One target at a time: go test
# fuzzes one function per run.
FUZZTIME ?= 10s

fuzz:
	@for file in $$(grep -rl --include='*_test.go' '^func Fuzz' $(MODULES)); do \
		module=$${file%%/*}; dir=$$(dirname "$${file#*/}"); \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "== fuzz $$module/$$dir $$name"; \
			(cd $$module && go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./$$dir); \
		done; \
	done

# BENCH_ARGS="-sections vmedia" runs some sections only.
BENCH_ARGS ?=

bench: setup
	cd tests && go run ./bench $(BENCH_ARGS)

# golangci-lint, pinned and built from the Go module proxy into bin/ (once
# per version); .golangci.yml says which linters run and why. Its govet
# runs go vet's analyzers.
GOLANGCI_LINT_VERSION := 2.15.0
GOLANGCI_LINT := bin/golangci-lint

lint-tool:
	@if ! $(GOLANGCI_LINT) version 2>/dev/null | grep -q "version $(GOLANGCI_LINT_VERSION) "; then \
		echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into bin/"; \
		mkdir -p bin; \
		GOBIN=$(CURDIR)/bin go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v$(GOLANGCI_LINT_VERSION); \
	fi

lint: lint-tool
	@bad=$$(gofmt -l $(MODULES)); \
	if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	@failed=""; \
	for m in $(MODULES); do \
		echo "== golangci-lint $$m"; \
		(cd $$m && ../$(GOLANGCI_LINT) run --allow-parallel-runners ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "golangci-lint failed in:$$failed"; exit 1; fi
