# The two commands of the README:
#   make run   installs everything, then starts the embedded service with a demo batch
#   make test  installs everything, then runs lint, types and the whole suite on SQLite and PostgreSQL
.PHONY: install run demo test test-sqlite test-postgres lint bench bench-quick

VENV := .venv/bin

install:
	@scripts/install.sh

run: install
	$(VENV)/docflow serve --demo

demo: install
	$(VENV)/docflow demo

lint: install
	$(VENV)/ruff check src tests bench
	$(VENV)/ruff format --check src tests bench
	$(VENV)/mypy

test-sqlite: install
	DOCFLOW_TEST_DATABASE=sqlite $(VENV)/pytest -q

test-postgres: install
	DOCFLOW_TEST_DATABASE=postgresql $(VENV)/pytest -q

test: lint test-sqlite test-postgres

bench: install
	$(VENV)/python -m bench

# A few documents per scenario (CI): fails only when a scenario cannot run, not on targets.
bench-quick: install
	$(VENV)/python -m bench --quick
