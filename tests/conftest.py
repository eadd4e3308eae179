"""Test-suite wide settings."""

import importlib.util

# tests/vllm_engine/ runs the real vLLM engine and needs vLLM's own virtual environment, which
# `make test` builds and runs it in (`make test-vllm`); the main environment has no vLLM.
collect_ignore = [] if importlib.util.find_spec("vllm") else ["vllm_engine"]
