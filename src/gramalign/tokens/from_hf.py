"""Token bytes of a ``transformers`` tokenizer, fast or slow, and the EOS of its model.

A fast tokenizer is read through its ``tokenizers`` backend; slow ones through their
SentencePiece model, their byte-level ``encoder``/``byte_decoder``, or ByT5's byte offset;
``MistralCommonBackend`` through ``mistral_common``. Added and declared special tokens are
special unless they are ordinary model pieces. Given the model, its logits width and its
generation config's EOS win over the tokenizer's; a tokenizer EOS named like a start marker
gives way to the token its chat template ends a turn with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gramalign.errors import VocabularyError

from .byte_conventions import KIND_BYTE_LEVEL, KIND_RAW, KIND_SENTENCEPIECE, byt5_entries, byte_level_entries
from .eos import chat_turn_end_ids, conventional_eos_ids, start_markers, valid_ids, warn_start_marker_eos
from .from_mistral import vocabulary_from_mistral
from .from_sentencepiece import sentencepiece_entries
from .from_tokenizers import tokenizers_entries
from .vocabulary import Vocabulary, assemble_vocabulary, type_name_of


def vocabulary_from_hf(
    tokenizer: Any,
    *,
    vocab_size: int | None = None,
    eos_token_ids: int | Iterable[int] | None = None,
    model: Any = None,
) -> Vocabulary:
    """:meth:`Vocabulary.from_hf`, documented there."""
    model_eos: list[int] = []
    if model is not None:
        width, model_eos = _model_width_and_eos(model)
        if vocab_size is None:
            vocab_size = width
        if eos_token_ids is None and model_eos:
            eos_token_ids = model_eos
    mistral = getattr(tokenizer, "tokenizer", None)
    if mistral is not None and hasattr(mistral, "instruct_tokenizer"):
        return vocabulary_from_mistral(mistral, vocab_size=vocab_size, eos_token_ids=eos_token_ids)

    backend = getattr(tokenizer, "backend_tokenizer", None)
    sp_model = getattr(tokenizer, "sp_model", None)
    byte_decoder = getattr(tokenizer, "byte_decoder", None)
    encoder = getattr(tokenizer, "encoder", None)
    default_eos: list[int] = []
    if backend is not None:
        entries, special_ids, kind = tokenizers_entries(backend)
        default_eos = conventional_eos_ids(backend)
    elif sp_model is not None:
        entries, special_ids = sentencepiece_entries(sp_model)
        kind = KIND_SENTENCEPIECE
        default_eos = valid_ids([sp_model.eos_id()])
    elif isinstance(byte_decoder, Mapping) and isinstance(encoder, Mapping):
        entries, special_ids = byte_level_entries(encoder, byte_decoder)
        kind = KIND_BYTE_LEVEL
    elif type(tokenizer).__name__ == "ByT5Tokenizer" and isinstance(getattr(tokenizer, "offset", None), int):
        entries, special_ids = byt5_entries(tokenizer.offset)
        kind = KIND_RAW
    else:
        raise VocabularyError(
            f"unsupported Hugging Face tokenizer type {type_name_of(tokenizer)}: it has no "
            "backend_tokenizer (fast), sp_model (SentencePiece) or encoder/byte_decoder "
            "(byte-level BPE)"
        )

    special_ids = set(special_ids)
    special_ids.update(int(i) for i in getattr(tokenizer, "added_tokens_decoder", {}))
    # Declared special tokens that are ordinary model pieces stay text: a pad token
    # set to, say, "!" must not make "!" impossible to generate.
    for token_id in getattr(tokenizer, "all_special_ids", ()):
        if token_id is not None and (token_id >= len(entries) or entries[token_id] is None):
            special_ids.add(int(token_id))
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        default_eos = [eos]
    elif isinstance(eos, Iterable):
        default_eos = [int(i) for i in eos]
    starts = start_markers(tokenizer, default_eos) if eos_token_ids is None else []
    if starts:
        # The model stops where its chat template closes a turn, not at a start marker.
        turn_end = chat_turn_end_ids(tokenizer)
        if turn_end:
            default_eos = turn_end
        else:
            warn_start_marker_eos(starts[0], source=type_name_of(tokenizer))

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False))

    return assemble_vocabulary(
        kind=kind,
        entries=entries,
        special_ids=special_ids,
        vocab_size=vocab_size,
        eos_token_ids=eos_token_ids,
        default_eos_ids=default_eos,
        add_prefix_space=encode,
        source=type_name_of(tokenizer),
    )


def _model_width_and_eos(model: Any) -> tuple[int | None, list[int]]:
    """(logits width, EOS ids of the generation config, else of the config) of a transformers model."""
    width = None
    embeddings = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if embeddings is not None and getattr(embeddings, "weight", None) is not None:
        width = int(embeddings.weight.shape[0])
    elif isinstance(getattr(getattr(model, "config", None), "vocab_size", None), int):
        width = model.config.vocab_size
    eos = None
    for config in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        eos = getattr(config, "eos_token_id", None) if config is not None else None
        if eos is not None:
            break
    ids = [] if eos is None else valid_ids(eos if isinstance(eos, (list, tuple)) else [eos])
    return width, ids
