"""Test-suite wide settings and shared fixtures."""

import importlib.util

import pytest

# tests/vllm_engine/ runs the real vLLM engine and needs vLLM's own virtual environment, which
# `make test` builds and runs it in (`make test-vllm`); the main environment has no vLLM.
collect_ignore = [] if importlib.util.find_spec("vllm") else ["vllm_engine"]


@pytest.fixture(scope="module")
def tiny_model():
    """A tiny random Llama with GPT-2's ids, padded wider (support/tiny_model.py)."""
    from support.tiny_model import tiny_llama

    return tiny_llama()
