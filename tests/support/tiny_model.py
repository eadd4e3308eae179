"""A tiny random Llama with GPT-2's ids and a wider, padded embedding, for real
``model.generate`` loops (the ``tiny_model`` fixture of conftest.py): the model is random,
so only the mask can make its outputs match a grammar."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

PADDED_WIDTH = 50304  # wider than GPT-2's 50257 ids, as many models are


def tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=PADDED_WIDTH, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=50256, eos_token_id=50256, pad_token_id=50256)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # a peaked random model: sampling is far from uniform
        model.lm_head.weight.mul_(40)
    return model
