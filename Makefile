# lockjepsen: every build, install and test step goes through this file.
GO      ?= go
BIN     := bin/lockjepsen
PKGS    := ./...
# Static binaries, as the Docker images need (FROM scratch): with the same
# CGO_ENABLED everywhere, the images' build, go vet and the tests' own builds
# share one compile cache. The images' binary, built with cgo on here, was a
# second compile of every package, minutes of CPU on 2 cores while the first
# end-to-end tests ran.
export CGO_ENABLED = 0
# bash for pipefail: go test's exit status must survive the pipe into testtimes.
SHELL   := /bin/bash
# The end-to-end tests start real clusters and mostly wait on timers (down-after,
# TTLs, heal settles): one after another they kept 2 cores half idle. Packages run
# side by side (-p 4) and so do the end-to-end tests inside each (-parallel 8),
# all bounded by TEST_SLOTS running at once across every package
# (internal/testslot; docs/development.md has the measurements behind the figure).
TESTFLAGS ?= -count=1 -timeout 60m -p 4 -parallel 8
# The longest packages first: go test starts packages in the order it is given
# them (and drops repeats), and in ./...'s alphabetical order the sweep package,
# 15 minutes long, started 162 s into a fresh-clone run, behind packages that
# take seconds, and set the run's end.
TESTPKGS ?= ./sweep ./runner ./cluster ./workshop ./cmd/lockjepsen ./examples $(PKGS)
TEST_SLOTS ?= 3
# go test -json of the last `make test`, for a closer look at its times.
TESTJSON ?= bin/test.json

.PHONY: all setup setup-ci build demo test vet fmt bench figures clean soak docs

all: build

## setup: make Valkey 9, libfaketime, etcd (Debian's etcd-server, its own service left stopped) and ZooKeeper
## (Debian's zookeeper and default-jre-headless, no daemon) available
## (builds Valkey 9.1.2 once into /var/cache/lockjepsen)
setup:
	@bash scripts/setup.sh >/dev/null

## setup-ci: setup plus what the tests need (PostgreSQL, bookworm's redis-server 7.0, Chromium, the adapters' libraries and sid's redis-py source,
## etcd-server for the etcd backend) and the two extra Valkey builds of setup-builds
setup-ci:
	@bash scripts/setup.sh --ci >/dev/null

## setup-builds: setup plus the Lua-less Valkey 9.1.2 (--valkey-build nolua) and Valkey 8.1.1
## (--mixed-versions), each built once from Debian's source packages into the cache
.PHONY: setup-builds
setup-builds:
	@bash scripts/setup.sh --builds >/dev/null

## setup-etcd: the same as setup, which now installs etcd-server and etcd-client (kept for old scripts)
.PHONY: setup-etcd
setup-etcd:
	@bash scripts/setup.sh --etcd >/dev/null

build:
	$(GO) build -o $(BIN) ./cmd/lockjepsen

## demo: the main job, the failover race on the local runtime. lockjepsen exits 1
## when it finds violations, which is what the demo sets out to show.
demo: setup build
	@./$(BIN) run --scenario failover-race; code=$$?; \
	if [ $$code -eq 1 ]; then echo "(exit 1: violations found, as the demo intends; open results/latest/index.html)"; exit 0; fi; \
	exit $$code

## test: everything CI runs; starts the services the tests need
test: setup-ci build vet
	@fmt=$$(gofmt -l .); if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	@mkdir -p bin && $(GO) build -o bin/testtimes ./scripts/testtimes
	set -o pipefail; LOCKJEPSEN_PG_DSN=$$(bash scripts/start-postgres.sh) LOCKJEPSEN_TEST_SLOTS=$(TEST_SLOTS) \
		$(GO) test -json $(TESTFLAGS) $(TESTPKGS) | tee $(TESTJSON) | bin/testtimes 15

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w .

## bench: the Go benchmarks (checker, history writer, resource)
bench: setup-ci
	LOCKJEPSEN_PG_DSN=$$(bash scripts/start-postgres.sh) $(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## figures: the cluster timing figures (median of 5)
figures: setup build
	./$(BIN) bench cluster --trials 5

clean:
	rm -rf bin

## images: build the Docker images locally (lockjepsen/valkey FROM scratch with the Valkey 9 binaries, lockjepsen/lockjepsen static,
## lockjepsen/runner: both, to run a sweep shard in one container; lockjepsen/etcd FROM scratch with Debian's etcd when
## etcd-server is installed, as make setup does; lockjepsen/zookeeper FROM scratch with Debian's ZooKeeper jars and the
## JRE that runs them, when zookeeper is installed); needs make setup
.PHONY: images
images: setup
	@bash scripts/build-images.sh

## soak: clean runs on every deployment and the faults expected valid (32 clients, 4 keys, 60 s; about 100 runs,
## outside CI), each must check valid; scripts/soak.sh OUT SEEDS, restartable. Writes results/soak/soak.md.
soak: setup build
	@bash scripts/soak.sh results/soak 5

## reference-row: one row of the reference at its rule, e.g. `make reference-row FAULTS=resync-window`: the 8
## default settings × FAULTS (comma-separated kinds), trials in results/rows-sweep/<kinds> (restartable: a second
## call resumes it), published to results/rows/<kinds>/ to commit (`sweep publish`: figures, plan and evidence; the
## row's README.md and cited trials stay). The matrix too long
## for one sitting is measured so, a row at a time; `make reference-join` sets the rows side by side. CONFIGS
## (comma-separated) re-runs only those settings of the row: the cells an older row left short of the rule. A row
## already committed (results/rows/NAME/plan.json) is swept again from its own plan, its cap and pace included; one
## whose plan ran as shard containers side by side (host_parallel) runs so again (scripts/sweep-shards.sh; make images).
.PHONY: reference-row reference-join
reference-row: setup build
	@test -n "$(FAULTS)" || { echo "make reference-row: give the fault kinds, e.g. FAULTS=resync-window" >&2; exit 2; }
	@name=$$(echo "$(FAULTS)" | tr , -); [ -z "$(CONFIGS)" ] || name=$$name-rerun; sw=results/rows-sweep/$$name; \
	if grep -qs '"host_parallel"' results/rows/$$name/plan.json; then \
		bash scripts/sweep-shards.sh results/rows/$$name/plan.json $$sw && ./$(BIN) sweep publish --to results/rows/$$name $$sw/merged; exit; fi; \
	if [ -f $$sw/plan.json ]; then ./$(BIN) sweep --resume $$sw; \
	elif [ -f results/rows/$$name/plan.json ]; then ./$(BIN) sweep --file results/rows/$$name/plan.json --out $$sw; \
	else ./$(BIN) sweep --faults "$(FAULTS)" $(if $(CONFIGS),--configs "$(CONFIGS)") --trials 3 --until-ci 0.2 --below 0.04 \
		--max-trials $(REFERENCE_CAP) --parallel 3 --out $$sw; fi; \
	./$(BIN) sweep publish --to results/rows/$$name $$sw

## reference-join: results/reference/ from the rows in results/rows/, in the order of REFERENCE_ROWS
## (`lockjepsen sweep join --replace`: each cell whole from the last row that measured it, so a re-run replaces the
## cells an older row left at its cap; refuses rows measured under another rule and a gap). The old reference is
## kept if it fails; its README.md is kept either way.
REFERENCE_ROWS = link-down fast-restart-replica-lag resync-window-split-brain resync-window link-down-rerun link-down-split-brain-rerun
REFERENCE_CAP = 40
reference-join: build
	@rm -rf results/reference.old; [ ! -d results/reference ] || mv results/reference results/reference.old
	@if ./$(BIN) sweep join --replace --out results/reference $(addprefix results/rows/,$(REFERENCE_ROWS)) > results/reference-summary.txt; then \
		mv results/reference-summary.txt results/reference/summary.txt; \
		[ ! -f results/reference.old/README.md ] || cp results/reference.old/README.md results/reference/; \
		rm -rf results/reference.old; cat results/reference/summary.txt; \
	else rm -rf results/reference results/reference-summary.txt; [ ! -d results/reference.old ] || mv results/reference.old results/reference; exit 1; fi

## reference-sweep: the reference sweep: the default matrix (8 settings × link-down, resync-window, fast-restart,
## split-brain, replica-lag), faults back to back in 2-minute trials, each cell until its 95% interval is narrower
## than 0.2, or with no hit until it is below 4% (~93 opportunities), at most 40 trials a cell. `lockjepsen sweep
## --until-ci 0.2 --below 0.04 --max-trials 40 --parallel 3 --dry-run` prints the estimate (docs/sweep.md). Restartable: a second
## call resumes results/reference-sweep. Only the summary, CSV and plots go to results/reference/ (the trial folders
## stay in results/reference-sweep, too large to commit). On Kubernetes: kubernetes/README.md.
.PHONY: reference-sweep
reference-sweep: setup build
	@if [ -f results/reference-sweep/plan.json ]; then ./$(BIN) sweep --resume results/reference-sweep; \
	else ./$(BIN) sweep --trials 3 --until-ci 0.2 --below 0.04 --max-trials $(REFERENCE_CAP) --parallel 3 --out results/reference-sweep; fi
	mkdir -p results/reference
	cd results/reference-sweep && cp plan.json sweep.json sweep.csv index.html probability.png probability.svg \
		exposure.png exposure.svg cost.png ../reference/

## docs: rewrite the lists in docs/ that come from the catalogs (faults, scenarios, recipes, deployments);
## a test fails when one is stale
docs:
	$(GO) run ./internal/docgen -w
