"""Fixtures for the real-engine tests: the SmolLM2 folder and chat prompts for it.

These run in vLLM's virtual environment (``make test-vllm``); vLLM is imported here so that a
missing or broken install fails the run instead of skipping it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import vllm  # noqa: F401  (fail, never skip, without vLLM)


@pytest.fixture(scope="session")
def model_dir() -> str:
    folder = os.environ.get("GRAMALIGN_SMOLLM2_DIR")
    if not folder or not (Path(folder) / "config.json").exists():
        pytest.fail("GRAMALIGN_SMOLLM2_DIR must name the SmolLM2 folder that `make test-vllm` writes "
                    "(tests/vllm_engine/save_smollm2.py)")
    return folder


@pytest.fixture(scope="session")
def chat_prompt(model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)

    def render(text: str) -> str:
        return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                             add_generation_prompt=True)

    return render
