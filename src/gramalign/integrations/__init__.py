"""gramalign in other libraries' loops; the only layer that imports torch or transformers
(through :mod:`.extras`, which names the pip extra a missing library comes with).

- Hugging Face: :mod:`.hf` (``GrammarLogitsProcessor`` for ``model.generate``,
  ``vocabulary_for_model``, ``generate_chat``), :mod:`.hf_model` (a transformers model as the
  samplers' ``LanguageModel``), :mod:`.generate` (``gramalign.generate``: model, grammar and
  sampler in one call), :mod:`.typed` (``generate_as``/``stream``: Python types in and out),
  :mod:`.generation` (``Generation``, the result of each), :mod:`.smollm2` (the demo model).
- Serving: :mod:`.vllm` (a vLLM v1 logits processor), :mod:`.batch_rows` (per-request
  grammars over an engine's persistent batch, engine-independent), :mod:`.tools`
  (OpenAI-style tools as one grammar, and tool calls parsed back).
- Bitmasks on devices: :mod:`.torch_ops` (``allocate_token_bitmask``,
  ``apply_token_bitmask_inplace``), :mod:`.triton_ops` (the fused CUDA kernel).
- :mod:`.cli`: the ``gramalign`` command.
"""
