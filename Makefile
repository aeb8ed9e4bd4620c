# Two commands for a newcomer: `make dev` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 3000
# The suite's processes (pytest-xdist): one per core. Most of a test's time is waiting (on a
# stack, a lease, a wave), so they overlap; each process has its own embedded Postgres, Redis
# and AWS stand-in, as a single run had (tests/conftest.py).
TEST_WORKERS ?= auto
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local

.PHONY: help browser checks dev lock schema screenshots simulate test test-aws-path aws-path-tools lint typecheck unit install bench bench-accept bench-sweeper bench-outbox bench-geo bench-soak bench-outage bench-coldstart bench-ops bench-push bench-offers bench-retention bench-history evaluate-policy evaluate-reporting cost template-lint checkov package clean

## List every target with what it is for (each target's `## ` line in this Makefile).
help:
	@awk '/^## / { if (!help) help = substr($$0, 4); next } \
	  /^[a-zA-Z][a-zA-Z0-9_-]*:([^=]|$$)/ { if (help) printf "  %-16s %s\n", substr($$1, 1, index($$1, ":") - 1), help; help = "" }' \
	  $(firstword $(MAKEFILE_LIST))

# Everything (the dev extra: tests, linters, sam, the browser driver): make test and the rest.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "Installing everything make test needs (the dev extra, about 1 GB) into $(VENV)..."
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]' -c constraints.txt
	touch $(STAMP) $(LOCAL_STAMP)

# What serving needs and no more (the local extra): make dev. Already there after make test.
$(LOCAL_STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "Installing what make dev needs (the local extra) into $(VENV)..."
	$(BIN)/python -m pip install --progress-bar on -e '.[local]' -c constraints.txt
	touch $(LOCAL_STAMP)

## Re-pin constraints.txt (the lock) from a fresh install of pyproject.toml's dependencies.
lock:
	rm -rf $(VENV)/lock && $(PYTHON) -m venv $(VENV)/lock
	$(VENV)/lock/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/lock/bin/python -m pip install --quiet -e '.[dev]'
	{ sed -n '/^#/p' constraints.txt; $(VENV)/lock/bin/python -m pip freeze --exclude-editable; } > constraints.new
	mv constraints.new constraints.txt && rm -rf $(VENV)/lock

## Install everything make test needs (the dev extra) into .venv.
install: $(STAMP)

## Write migrations/schema.sql, the current schema, from the migrations (after adding one).
# tests/integration/test_schema_file.py fails while it is stale.
schema: $(STAMP)
	$(BIN)/python -m dispatch_local.schema

## Serve the API on http://127.0.0.1:$(PORT) (embedded Postgres and Redis).
# Unless DATABASE_URL / REDIS_URL are set: then theirs.
dev: $(LOCAL_STAMP)
	PORT=$(PORT) $(BIN)/dispatch dev --port $(PORT)

## Lint, type-check, template lint and security scan, and the whole test suite.
# The checks run side by side (checkov's first install waits on the network, mypy and cfn-lint
# on the processor), each one's output kept together; the suite runs once all have passed,
# on every core (TEST_WORKERS).
test: $(STAMP)
	@$(MAKE) --no-print-directory -j4 --output-sync=target checks
	$(BIN)/pytest -n $(TEST_WORKERS)

## The checks of make test without the suite: ruff, mypy, template lint, checkov, Chromium.
checks: lint typecheck template-lint checkov browser

## The second tier: integration and end-to-end tests through PgBouncer and a Redis Cluster.
# The parts AWS puts in front: the integration and end-to-end tests again, through PgBouncer in
# transaction pooling (4 server connections per database and user, for many more clients; it
# refuses startup options, as RDS Proxy does) and on a three-master Redis Cluster (a sharded
# keyspace, as ElastiCache Serverless is). Both from Debian's packages, installed when missing,
# started and stopped by the tests themselves.
test-aws-path: $(STAMP) aws-path-tools
	DISPATCH_TEST_AWS_PATH=1 $(BIN)/pytest -n $(TEST_WORKERS) tests/integration tests/e2e

## PgBouncer and redis-server from Debian's packages, when missing (for test-aws-path).
aws-path-tools:
	@{ command -v pgbouncer || test -x /usr/sbin/pgbouncer; } >/dev/null && command -v redis-server >/dev/null \
	  || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pgbouncer redis-server >/dev/null; }
	@echo "pgbouncer: $$(PATH=$$PATH:/usr/sbin pgbouncer --version | head -1); $$(redis-server --version)"

## The pure logic alone, in seconds: no Postgres, Redis or AWS stand-in needed.
unit: $(STAMP)
	$(BIN)/pytest tests/unit -q

## Ruff: the linter, and the formatter's check.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## mypy --strict over shared/dispatch, local, sim, bench, functions and tests (pyproject's files).
typecheck: $(STAMP)
	$(BIN)/mypy

## cfn-lint and SAM's own validation, both offline.
template-lint: $(STAMP)
	$(BIN)/cfn-lint template.yaml
	AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} $(BIN)/sam validate --lint

## Headless Chromium from Debian's packages for the browser tests (tests/browser), when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	@chromium --version 2>/dev/null | head -1

## Security scan of the template (checkov), offline.
# It lives in an environment of its own inside .venv: it pins an old boto3 that the project's
# tools cannot share.
CHECKOV := $(VENV)/checkov/bin/checkov
CHECKOV_VERSION := 3.3.30
$(CHECKOV): $(STAMP)
	$(PYTHON) -m venv $(VENV)/checkov
	$(VENV)/checkov/bin/python -m pip install --quiet 'checkov==$(CHECKOV_VERSION)'

checkov: $(CHECKOV)
	$(CHECKOV) --file template.yaml --quiet --compact --skip-download

## Build every function and the layer for Lambda (python3.12, arm64) without Docker.
# pyenv's shim only answers for the active version, so look for the interpreter itself first.
PYTHON312 ?= $(shell ls -d $$HOME/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -1 || true)
ifeq ($(PYTHON312),)
PYTHON312 := $(shell command -v python3.12)
endif
package: $(STAMP)
	test -x "$(PYTHON312)" || (echo "sam build needs python3.12 on this machine" && exit 1)
	PYTHON312=$(PYTHON312) PATH=$(dir $(PYTHON312)):$$PATH $(BIN)/sam build --template-file template.yaml

## Retention: one run's batches of the retention duty on 20,000 old jobs; rows/s, archive bytes.
bench-retention: $(STAMP)
	$(BIN)/python -m bench.retention

## Accept benchmark: handler path vs its own SQL, SELECT FOR UPDATE, and a bare UPDATE.
bench-accept: $(STAMP)
	$(BIN)/python -m bench.accept

## Remove .venv, the local stack's state (.dispatch) and the tools' caches.
clean:
	rm -rf $(VENV) .dispatch .pytest_cache .mypy_cache .ruff_cache

## Offer policy evaluation (issues 24 and 38): nearest against likely on three cities, each
# with a record of answers and on its first day (CITY_cold: --no-past), seeds EVAL_SEEDS. Two
# runs at a time (EVAL_LANES: about 15 min of wall time a seed on two cores), then the table,
# the bill and the decision by the rule fixed before the runs (sim/runs/eval/evaluation.md).
EVAL_SEEDS ?= 102 103 104 105 106 107
EVAL_LANES ?= 2
EVAL_CITIES ?= district evening shortage district_cold evening_cold shortage_cold
EVAL_RUNS := $(foreach seed,$(EVAL_SEEDS),$(foreach city,$(EVAL_CITIES),sim/runs/eval/$(city)-$(seed)/report.md))
evaluate-policy: $(STAMP)
	rm -f $(EVAL_RUNS)
	$(MAKE) --no-print-directory -j$(EVAL_LANES) $(EVAL_RUNS)
	$(BIN)/python -m sim.evaluate sim/runs/eval --docs docs/simulation.md

# One evaluation run: sim/runs/eval/CITY-SEED/report.md (CITY_cold: the city with no past).
sim/runs/eval/%/report.md:
	$(BIN)/python -m sim sim/scenarios/eval/$(patsubst %_cold,%,$(word 1,$(subst -, ,$*))).toml \
	  $(if $(filter %_cold,$(word 1,$(subst -, ,$*))),--no-past) \
	  --seed $(word 2,$(subst -, ,$*)) --out sim/runs/eval/$* --progress-seconds 0

## Reporting rule (issue 37 point 1): the rule against today's PUT every 60 s, on two cities.
# `nearest` only, the eval district and evening, seeds REPORTING_SEEDS, each way on each draw
# of the phones' report clocks in REPORTING_CLOCKS (`phase`, the scenario's own: the verdict's;
# others show what a change of nothing that matters does), two runs at a time: about 4 min of
# wall time a seed and draw on two cores; every seed's jobs pooled per run
# (sim/runs/reporting/reporting.md).
REPORTING_SEEDS ?= 120 121 122 123 124 125 126 127
REPORTING_CLOCKS ?= phase
REPORTING_RUNS := $(foreach clocks,$(REPORTING_CLOCKS),$(foreach city,district evening,$(foreach seed,$(REPORTING_SEEDS),$(foreach way,interval rule,sim/runs/reporting/$(city)-$(seed)-$(way).$(clocks)/report.md))))
evaluate-reporting: $(STAMP)
	rm -f $(REPORTING_RUNS)
	$(MAKE) --no-print-directory -j$(EVAL_LANES) $(REPORTING_RUNS)
	$(BIN)/python -m sim.evaluate_reporting sim/runs/reporting

# One reporting run: sim/runs/reporting/CITY-SEED-WAY.CLOCKS/report.md (WAY interval or rule).
sim/runs/reporting/%/report.md:
	$(BIN)/python -m sim sim/scenarios/eval/$(word 1,$(subst -, ,$*)).toml --only nearest \
	  --seed $(word 2,$(subst -, ,$*)) --reporting $(basename $(word 3,$(subst -, ,$*))) \
	  --clocks $(patsubst .%,%,$(suffix $(word 3,$(subst -, ,$*)))) \
	  --out sim/runs/reporting/$* --progress-seconds 0

## The bill at the seed's load (issue 37 point 2): today's design against the new, line by line.
# Two runs of sim/scenarios/cost.toml on the same world (about 2 minutes of wall time each),
# workers reporting today's way and by the rule, then the seed's month from what they measured.
COST_RUNS := sim/runs/cost/today/report.md sim/runs/cost/new/report.md
cost: $(STAMP)
	rm -f $(COST_RUNS)
	$(MAKE) --no-print-directory $(COST_RUNS)
	$(BIN)/python -m sim.seed_bill --runs sim/runs/cost

sim/runs/cost/today/report.md:
	$(BIN)/python -m sim sim/scenarios/cost.toml --only nearest --reporting interval \
	  --out sim/runs/cost/today --progress-seconds 0
sim/runs/cost/new/report.md:
	$(BIN)/python -m sim sim/scenarios/cost.toml --only nearest --reporting rule \
	  --out sim/runs/cost/new --progress-seconds 0

## Offer policy benchmark: a wave's cost per job, `likely` over the seed's `nearest` (<= 1.5x).
bench-offers: $(STAMP)
	$(BIN)/python -m bench.offers

## History benchmark (issue 35): every statement on DAYS days of load against the current state.
# The seed's load is 50k jobs a day; the table goes to docs/benchmarks.md. The history database
# (dispatch_bench_history_DAYS) is kept and reused by the next run at the same DAYS (a newer
# schema is migrated onto it); 30 days load in about half an hour.
DAYS ?= 30
bench-history: $(STAMP)
	$(BIN)/python -m bench.history --days $(DAYS)

## Sweeper benchmark: reopen 100k expired leases; accept p99 during the sweep vs idle.
bench-sweeper: $(STAMP)
	$(BIN)/python -m bench.sweeper

## Outbox benchmark: drain a 100k event backlog with the relay vs a naive row-at-a-time loop.
bench-outbox: $(STAMP)
	$(BIN)/python -m bench.outbox

## Every benchmark and the simulated district, one after the other, then docs/benchmarks.md.
bench: $(STAMP)
	$(MAKE) bench-accept
	$(MAKE) bench-sweeper
	$(MAKE) bench-outbox
	$(MAKE) bench-geo
	$(MAKE) bench-soak
	$(MAKE) bench-outage
	$(MAKE) bench-coldstart
	$(MAKE) bench-ops
	$(MAKE) bench-push
	$(MAKE) bench-offers
	$(MAKE) bench-history
	$(MAKE) simulate
	$(BIN)/python -m bench.report

## The simulated district (sim/scenarios/district.toml): four ways of offering on one city.
# One seeded city, two hours at 12x real time each; the report, plots and replays go to
# sim/runs/district.
SCENARIO ?= sim/scenarios/district.toml
simulate: $(STAMP)
	$(BIN)/dispatch simulate $(SCENARIO)

## The console's screenshots in docs/, from the district's replay (run `make simulate` first).
screenshots: $(STAMP) browser
	$(BIN)/python -m tests.browser.screenshots sim/runs/district/replay-seed-waves.jsonl docs

## Cold start: each function imported from its Lambda layout in a fresh interpreter.
# Against the floor any database-backed route pays (a Powertools resolver with validation +
# psycopg).
bench-coldstart: $(STAMP)
	$(BIN)/python -m bench.coldstart

## Ops reads (the console's routes) at the simulated district's scale, handler against floor.
bench-ops: $(STAMP)
	$(BIN)/python -m bench.ops

## Connection kills under load: bus delay and lease overshoot, steady against 50 kills.
bench-outage: $(STAMP)
	$(BIN)/python -m bench.outage

## Load and soak: clients against the local stack, then the history checker.
bench-soak: $(STAMP)
	$(BIN)/python -m bench.soak

## Geo benchmark: nearby at 1M jobs vs PostGIS, location updates vs a bare GEOADD loop.
# PostGIS is installed for the benchmark only.
bench-geo: $(STAMP)
	@psql "$${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}" -Atc "SELECT 1 FROM pg_available_extensions WHERE name = 'postgis'" 2>/dev/null | grep -q 1 \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-postgis-3) \
	  || echo "PostGIS could not be installed: the PostGIS side will be reported as missing"
	$(BIN)/python -m bench.geo

## Push: 2,000 phones on the local WebSocket; commit-to-device latency vs a bare broadcast.
# Offers at the district's rush rate, against a bare websockets broadcast of the same messages.
bench-push: $(STAMP)
	$(BIN)/python -m bench.push
