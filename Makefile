# Two entry points for a fresh machine (see README.md): `make site` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: site test lint setup setup-test system-deps serve

site: setup                      ## install the generator and build the bundled example report into site/
	$(BIN)/python -m generator build

test: setup-test system-deps lint  ## install everything incl. the capture extra, lint, run the whole test suite
	$(BIN)/python -m pytest

lint: setup-test                 ## ruff (style, bugs, import order) and import-linter (the layer contracts in .importlinter)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

serve: setup
	$(BIN)/mkdocs serve

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

setup: $(BIN)/python
	$(BIN)/pip install -q -e .

setup-test: $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[capture,test]'

# Headless Chromium and a CJK font for the browser tests (Debian packages; needs root or sudo).
system-deps:
	@command -v chromium >/dev/null && fc-list 2>/dev/null | grep -qi wqy || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q --no-install-recommends chromium fonts-wqy-microhei xz-utils; }
