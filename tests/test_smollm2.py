"""The demo model's loader: quiet when asked (issue 40, item 5)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def test_the_conversion_bar_is_silenced_and_restored(capfd):
    from transformers import modeling_gguf_pytorch_utils as conversion

    from gramalign.integrations.smollm2 import _no_conversion_bar

    bar = conversion.tqdm
    with _no_conversion_bar():
        assert list(conversion.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...")) == [0, 1, 2]
    assert conversion.tqdm is bar
    assert "Converting" not in capfd.readouterr().err


@pytest.mark.slow
def test_load_smollm2_without_progress_prints_nothing():
    """Loading in a fresh interpreter, as a script would: stdout and stderr stay empty (transformers'
    GGUF conversion drew a tqdm bar of its own on stderr)."""
    code = textwrap.dedent("""
        from gramalign.integrations.smollm2 import load_smollm2
        model, tokenizer = load_smollm2(show_progress=False)
        assert model.generation_config.eos_token_id == 2
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == "" and result.stderr == "", result.stderr[-2000:]
