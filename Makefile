# tollgate — see README.md.
GO       ?= go
FUZZTIME ?= 30s
PKGS     := ./...

.PHONY: run test bench fuzz lint build demo

## run: start the service on the embedded memory store (127.0.0.1:8080)
run:
	$(GO) run ./cmd/tollgate serve

## demo: tollgate (memory store, 127.0.0.1:8080) and the demo login of
## examples/demo-login (127.0.0.1:8081) together; Ctrl-C stops both
demo:
	GO=$(GO) ./scripts/demo.sh

## build: build bin/tollgate
build:
	$(GO) build -o bin/tollgate ./cmd/tollgate

## test: everything — vet, unit, conformance on real Redis and Redis Cluster, scenarios,
## fuzz seeds, end-to-end — with -race. Installs redis-server when missing; the tests
## start their own servers on free loopback ports and stop them.
test:
	./scripts/ensure-redis.sh
	./scripts/ensure-promtool.sh
	./scripts/ensure-chromium.sh
	$(GO) vet $(PKGS)
	$(GO) test -race -shuffle=on -count=1 $(PKGS)

## bench: the benchmarks, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=6 $(PKGS)

## fuzz: run every fuzz target for FUZZTIME each (a new reproducer fails it)
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

## lint: formatting and vet
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
