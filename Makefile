# Two entry points for a fresh machine (see README.md): `make site` and `make test`.
PY ?= python3
# torch for the tests and the CPU capture workloads. Here and in CI pip's find-links hold only the CPU
# build (torch-2.13.0+cpu), so this takes it; on a stock machine PyPI gives the CUDA build instead:
# pass the CPU one, e.g. make test TORCH="torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu"
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin

.PHONY: site test test-no-browser lint setup setup-test system-deps serve screenshots

site: setup                      ## install the generator and build the bundled example report into site/
	$(BIN)/python -m generator build

test: setup-test system-deps lint  ## install everything incl. the capture and agent extras, lint, run the whole test suite
	$(BIN)/python -m pytest

test-no-browser: setup-test lint  ## the same without the headless-Chromium tests: no apt, no root
	$(BIN)/python -m pytest -m "not browser"

lint: setup-test                 ## ruff (style, bugs, import order) and import-linter (the layer contracts in .importlinter)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

serve: setup
	$(BIN)/mkdocs serve

screenshots: site setup-test system-deps  ## remake docs/site-comparison.png from site/ in headless Chromium
	$(BIN)/python tools/screenshots.py site docs/site-comparison.png

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

setup: $(BIN)/python
	$(BIN)/pip install -q -e .

setup-test: $(BIN)/python
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e '.[capture,test,agent,cluster]'

# Headless Chromium and a CJK font for the browser tests (Debian packages; needs root or sudo).
system-deps:
	@command -v chromium >/dev/null && fc-list 2>/dev/null | grep -qi wqy || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q --no-install-recommends chromium fonts-wqy-microhei xz-utils; }
