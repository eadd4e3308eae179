# Two entry points: `make demo` and `make test`. Each creates .venv on first use.
# TORCH_SPEC is overridable, e.g. `make test TORCH_SPEC="torch --index-url ..."` for a GPU build.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_SPEC ?= torch==2.13.0

.PHONY: demo test bench clean

$(VENV)/.torch:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "$(TORCH_SPEC)"
	touch $@

$(VENV)/.dev: $(VENV)/.torch pyproject.toml
	$(PIP) install --quiet -e ".[dev,demo]"
	touch $@

$(VENV)/.demo: $(VENV)/.torch pyproject.toml
	$(PIP) install --quiet -e ".[demo]"
	touch $@

$(VENV)/.bench: $(VENV)/.dev pyproject.toml
	$(PIP) install --quiet -e ".[dev,demo,bench]"
	touch $@

demo: $(VENV)/.demo
	HF_HUB_OFFLINE=1 $(PY) examples/demo.py

test: $(VENV)/.dev
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q tests

bench: $(VENV)/.bench
	HF_HUB_OFFLINE=1 $(PY) benchmarks/regex_index.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/grammar_masks.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/maskbench.py --sample 20
	HF_HUB_OFFLINE=1 $(PY) benchmarks/formats.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/e2e.py

clean:
	rm -rf $(VENV) build src/*.egg-info
