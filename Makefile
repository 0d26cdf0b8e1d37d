# tollgate — see README.md.
GO       ?= go
FUZZTIME ?= 30s
PKGS     := ./...
# The Python client's tests run on the system's python3 (Debian's, with its
# mypy; scripts/ensure-python.sh installs both).
PYTHON   ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)

.PHONY: run test test-deps test-clients bench fuzz lint build demo demo-express release image prove

## run: start the service on the embedded memory store (127.0.0.1:8080)
run:
	$(GO) run ./cmd/tollgate serve

## demo: tollgate (memory store; a small breached-password corpus,
## examples/demo-login/testdata, in which bob's password has leaked, so that
## it shows the step-up) and the demo login of examples/demo-login together,
## on free loopback ports (printed; TOLLGATE_ADDR and DEMO_ADDR choose them);
## Ctrl-C stops both
demo:
	GO=$(GO) ./scripts/demo.sh

## demo-express: the same demo login written in Express with the TypeScript
## client (examples/express-login), next to tollgate, on free loopback ports
## (printed); Ctrl-C stops both
demo-express:
	GO=$(GO) ./scripts/demo-express.sh

## build: build bin/tollgate (the server) and bin/tollgate-lab (simulate,
## attack, replay, conformance)
build:
	$(GO) build -o bin/tollgate ./cmd/tollgate
	$(GO) build -o bin/tollgate-lab ./cmd/tollgate-lab

## release: reproducible archives for linux/amd64, linux/arm64 and darwin/arm64,
## with a CycloneDX SBOM each and SHA256SUMS: make release VERSION=v0.1.0 [DIST=dist]
DIST ?= dist
release:
	@test -n "$(VERSION)" || { echo "make release VERSION=vX.Y.Z [DIST=dir]"; exit 2; }
	GO=$(GO) ./scripts/release.sh $(VERSION) $(DIST)

## image: the container image (Containerfile, FROM scratch) with podman, buildah
## or docker: make image [IMAGE=name:tag] [VERSION=v0.1.0]
image:
	GO=$(GO) VERSION=$(VERSION) ./scripts/image.sh $(IMAGE)

## test: everything — vet, unit, conformance on real Redis and Redis Cluster, scenarios,
## fuzz seeds, end-to-end, both demo logins in headless Chromium (e2e/browser), the
## API against openapi.yaml (api/contract) — with -race; then the
## TypeScript and Python clients against real tollgate processes, the shared vectors,
## and the contract (generated types compile, redocly lint). Installs redis-server,
## promtool, chromium, node/npm and python3 from the system's packages when missing
## (npm packages with `npm ci` from each lockfile); the tests start their own servers
## on free loopback ports and stop them.
test: test-deps
	$(GO) vet $(PKGS)
	# -timeout: the scenarios under the race detector take internal/lab/simulate
	# 5-8 minutes on a loaded 2-core machine, near go test's 10-minute default.
	$(GO) test -race -shuffle=on -count=1 -timeout 25m $(PKGS)
	# The attack searches the race detector makes too slow (internal/lab/attack's
	# raceTooSlow), without it.
	$(GO) test -count=1 -run 'TestBuiltInPolicy_NoStrategyBeatsABound|TestSearch_FindsTheBreakInAWeakenedPolicy' ./internal/lab/attack
	cd deploy/kubernetes && $(GO) vet ./... && $(GO) test -count=1 ./...
	# The nested modules that keep test-only dependencies out of the
	# service's go.mod: the OpenAPI contract (kin-openapi; api's tests run
	# its apicheck on every response) and the browser tests (chromedp).
	cd api/contract && $(GO) vet ./... && $(GO) test -race -shuffle=on -count=1 ./...
	cd e2e/browser && $(GO) vet ./... && $(GO) test -race -shuffle=on -count=1 ./...
	# tollgate's proxy in front of Django's admin and DokuWiki, attacked by
	# hydra while an owner signs in with Chromium (e2e/, a module of its own).
	cd e2e && $(GO) vet ./... && $(GO) test -count=1 ./...
	$(MAKE) --no-print-directory test-clients

## prove: the long attack search (tollgate-lab attack, docs/proof.md): every
## objective of the built-in policy (or CONFIG's), PROVE_BUDGET strategies each
## (about half an hour on two cores, most of it spend_per_day's pumpers), the
## best strategies written to PROVE_OUT (bin/prove); exits 1 when a strategy
## beats a bound (today: spend_per_day: docs/proof.md). `make test` runs a
## short search of the same objectives (internal/lab/attack).
PROVE_BUDGET ?= 400
PROVE_SEED   ?= 1
PROVE_OUT    ?= bin/prove
prove:
	$(GO) run ./cmd/tollgate-lab attack -budget $(PROVE_BUDGET) -seed $(PROVE_SEED) -out $(PROVE_OUT) $(if $(CONFIG),-config $(CONFIG))

## test-deps: what the tests need besides Go: servers, browsers, node packages
test-deps:
	./scripts/ensure-redis.sh
	./scripts/ensure-promtool.sh
	./scripts/ensure-chromium.sh
	./scripts/ensure-node.sh
	./scripts/ensure-python.sh
	./scripts/ensure-systemd.sh
	./scripts/ensure-podman.sh
	./scripts/ensure-realapps.sh
	cd clients/typescript && npm ci --no-audit --no-fund
	cd clients/contract && npm ci --no-audit --no-fund
	# The Express demo installs the client as its users do: the npm tarball.
	./scripts/build-npm.sh build/npm
	cd examples/express-login && npm ci --no-audit --no-fund && npm run build
	cd examples/webhook-receiver-ts && npm ci --no-audit --no-fund

## test-clients: the TypeScript and Python clients (each against a real tollgate
## serve it starts, and every vector of clients/testdata), the Express demo behind
## the TypeScript client's middleware (examples/express-login), the contract check
## and the TypeScript webhook receiver (examples/webhook-receiver-ts)
test-clients: build
	cd clients/typescript && TOLLGATE_BIN=$(CURDIR)/bin/tollgate npm test
	cd examples/express-login && TOLLGATE_BIN=$(CURDIR)/bin/tollgate npm test
	TOLLGATE_BIN=$(CURDIR)/bin/tollgate $(PYTHON) -m unittest discover -s clients/python/tests -t clients/python
	cd clients/contract && npm test
	cd examples/webhook-receiver-ts && npm test

## bench: the benchmarks, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=6 $(PKGS)

## fuzz: run every fuzz target for FUZZTIME each (a new reproducer fails it)
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

## lint: formatting, vet and staticcheck (pinned, from the Go module proxy)
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
