# Every target creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
DEMO_STAMP := $(VENV)/.demo-installed
STUDIO_STAMP := $(VENV)/.studio-installed
DEV_STAMP := $(VENV)/.dev-installed

.PHONY: demo studio test lint format bench eval clean mutate docs

# An editable install in setuptools' "strict" mode: a tree of links to the package's
# files, which type checkers, documentation tools and editors can read (the default mode's
# import hook hides the package from them). A module added or removed needs the install
# again: the stamps below depend on the list of the package's files, kept in PACKAGE_LIST.
EDITABLE := --config-settings editable_mode=strict
PACKAGE_LIST := $(VENV)/.package-files
PACKAGE_FILES := $(shell find . -name '*.py' -not -path './.venv*' -not -path './build/*' \
	-not -path './tests/*' -not -path './examples/*' -not -path './docs/*' | LC_ALL=C sort)
$(shell mkdir -p $(VENV) && echo '$(PACKAGE_FILES)' > $(PACKAGE_LIST).new && \
	(cmp -s $(PACKAGE_LIST).new $(PACKAGE_LIST) || cp $(PACKAGE_LIST).new $(PACKAGE_LIST)))

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The embedded llama.cpp server, and its model file fetched once into the cache
# (~/.cache/loopgraphs, or $$LOOPGRAPHS_CACHE).
$(DEMO_STAMP): pyproject.toml $(PACKAGE_LIST) | $(PY)
	$(PY) -m pip install -q -e ".[local]" $(EDITABLE)
	$(BIN)/loopgraphs fetch-model
	touch $@

$(STUDIO_STAMP): pyproject.toml $(DEMO_STAMP)
	$(PY) -m pip install -q -e ".[local,studio]" $(EDITABLE)
	touch $@

$(DEV_STAMP): pyproject.toml $(DEMO_STAMP)
	$(PY) -m pip install -q -e ".[local,studio,dev,postgres,eval,docs]" $(EDITABLE)
	touch $@

demo: $(DEMO_STAMP)
	$(BIN)/loopgraphs demo

studio: $(STUDIO_STAMP)
	$(BIN)/langgraph dev

test: $(DEV_STAMP)
	$(PY) -m pytest -q --durations=15 $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --package loopgraphs

format: $(DEV_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(DEV_STAMP)
	$(PY) -m tests.benchmarks.run

eval: $(DEV_STAMP)
	$(BIN)/loopgraphs eval --limit 10

# The documentation site (docs/mkdocs.yml, pages in docs/pages/) into build/site.
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -f docs/mkdocs.yml

# Mutation testing of the guarantee modules, each against its own tests (build/mutation/);
# MUTATE_ARGS="--group approval" runs one group, "--report" reprints the last results.
mutate: $(DEV_STAMP)
	$(PY) -m tests.mutation.run $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) .venv-* build *.egg-info .pytest_cache .mypy_cache .ruff_cache
