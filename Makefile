# Two commands on a fresh machine (Python >= 3.11): `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test bench dev clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## Install, simulate the built-in 100-node demo cluster, run the whole pipeline, print the report path.
demo: $(STAMP)
	$(BIN)/gpusre demo --out demo

## Install and run the test suite (installs headless Chromium for the browser test when apt is available),
## one worker per core (pytest-xdist; a test module stays on one worker, so its fixtures are built once).
test: $(STAMP)
	sh tests/install_browser.sh
	$(BIN)/python -m pytest -q -n auto --dist loadfile

## Benchmarks (on demand; not part of the tests).
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_sacct.py

## Dagster UI over the demo warehouse (after `make demo`): its runs, materializations and checks are in demo/dagster_home.
dev: $(STAMP)
	$(BIN)/python -m pip install --quiet 'dagster-webserver>=1.13,<1.14'
	DAGSTER_HOME=$$(pwd)/demo/dagster_home; mkdir -p $$DAGSTER_HOME; DAGSTER_HOME=$$DAGSTER_HOME $(BIN)/dagster dev -w workspace.yaml

clean:
	rm -rf demo .pytest_cache
