# Two commands set up a new machine: `make run` runs the platform, `make test` runs every test.
GO      ?= go
BIN     := bin
GOBIN   := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.DEFAULT_GOAL := help
.PHONY: help run test bench lint fmt build loadtest services tools audit chaos stadium megashow pgha pgha-stop

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

services: ## start (and if needed install) Redis and PostgreSQL
	@bash deploy/dev/services.sh

pgha: ## start a local PostgreSQL failover formation (pg_auto_failover: monitor, primary, synchronous standby) and print its DATABASE_URL
	@bash deploy/dev/pgha.sh start

pgha-stop: ## stop the formation `make pgha` started and delete its data
	@bash deploy/dev/pgha.sh stop

tools: ## install the test suite's external programs (stripe-mock, chromium, nginx, workerd, pgbouncer, pg_auto_failover)
	@bash deploy/dev/tools.sh

build: ## build every binary into bin/
	$(GO) build -o $(BIN)/ ./booking/cmd/... ./edge/cmd/... ./loadtest/cmd/...

run: services build ## run the platform: edge on :8080, booking on :8081, payment simulator on :8082
	@bash deploy/dev/run.sh

# The packages whose tests take longest, named first: go test starts packages in the order given (two at a time
# on two cores), so these begin at once rather than last, when little else is left to run beside them.
SLOW_TESTS := ./edge/e2e/ ./waitroom/redis/ ./booking/app/ ./loadtest/crowd/ ./waitroom/http/ ./edge/app/

test: services tools ## run every test (race detector on) against real Redis and PostgreSQL; a failing run ends with what failed
	@GO=$(GO) bash deploy/dev/test.sh -race -count=1 -timeout 30m $(SLOW_TESTS) ./...

bench: services build ## run the benchmarks and refresh BENCHMARKS.md
	@bash deploy/dev/bench.sh

stadium: services build ## the stadium preset alone at full size (100,000 fans over 10 edges and 10 generator processes; report in .run/stadium)
	@bash deploy/dev/stadium.sh

megashow: services build ## a million fans in one show's partitioned queue, 100,000 of them streaming (8 edges, a private 3-master Redis Cluster; report in .run/megashow)
	@bash deploy/dev/megashow.sh

audit: services build ## Lighthouse (mobile) on the home page, seat map and waiting room; scores into BENCHMARKS.md
	@bash deploy/dev/audit.sh

chaos: services ## the full chaos test: a 1,500-fan sale while booking, the edge, PostgreSQL and Redis fail (report in loadtest/reports/chaos.md), a 1,000-fan sale on a Redis Cluster losing a master, an 800-fan sale on a PostgreSQL formation losing its primary, and 2,000 fans in 5 s at a show in threshold mode
	@mkdir -p loadtest/reports
	CHAOS=full CHAOS_REPORT=$(CURDIR)/loadtest/reports/chaos.md $(GO) test -count=1 -v -timeout 20m -run 'TestChaos|TestFailoverDuringCrowd|TestPostgresFailoverDuringCrowd' ./loadtest/chaos/
	CHAOS=full $(GO) test -count=1 -v -timeout 10m -run TestThresholdSpike ./loadtest/spike/

loadtest: build ## run the smoke flash-crowd scenario against a running platform (BASE, default http://localhost:8080)
	$(BIN)/loadtest -scenario smoke $(if $(BASE),-base $(BASE),)

lint: ## go vet, gofmt, go.mod tidiness, openapi.yaml's validity, govulncheck (VULNDB: its database, or off)
	$(GO) vet ./...
	$(GO) mod tidy -diff
	$(GO) test -count=1 -run OpenAPI .
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@bash deploy/dev/vulncheck.sh

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')
