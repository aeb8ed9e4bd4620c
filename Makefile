# Two commands for a newcomer: `make dev` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 3000
STAMP := $(VENV)/.installed

.PHONY: dev test lint typecheck unit install bench-accept bench-sweeper bench-outbox cfn-lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## Serve the API on http://127.0.0.1:$(PORT) (embedded Postgres and Redis unless
## DATABASE_URL / REDIS_URL are set).
dev: $(STAMP)
	PORT=$(PORT) $(BIN)/dispatch dev --port $(PORT)

## Lint, type-check, template lint, and the whole test suite.
test: $(STAMP) lint typecheck cfn-lint
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

cfn-lint: $(STAMP)
	$(BIN)/cfn-lint template.yaml

## Accept benchmark: handler path vs its own SQL, SELECT FOR UPDATE, and a bare UPDATE.
bench-accept: $(STAMP)
	$(BIN)/python -m bench.accept

clean:
	rm -rf $(VENV) .dispatch .pytest_cache .mypy_cache .ruff_cache

## Sweeper benchmark: reopen 100k expired leases; accept p99 during the sweep vs idle.
bench-sweeper: $(STAMP)
	$(BIN)/python -m bench.sweeper

## Outbox benchmark: drain a 100k event backlog with the relay vs a naive row-at-a-time loop.
bench-outbox: $(STAMP)
	$(BIN)/python -m bench.outbox
