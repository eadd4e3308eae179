"""Token bytes of a ``mistral_common`` tokenizer: Tekken (tiktoken-style byte pieces after
``num_special_tokens`` special ids) or its SentencePiece tokenizer.

The ``MistralTokenizer`` wrapper and its instruct tokenizer are unwrapped to the inner one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gramalign.errors import VocabularyError

from .byte_conventions import KIND_SENTENCEPIECE, KIND_TEKKEN
from .eos import valid_ids
from .from_sentencepiece import sentencepiece_entries
from .vocabulary import Vocabulary, assemble_vocabulary, type_name_of


def vocabulary_from_mistral(
    tokenizer: Any,
    *,
    vocab_size: int | None = None,
    eos_token_ids: int | Iterable[int] | None = None,
) -> Vocabulary:
    """:meth:`Vocabulary.from_mistral`, documented there."""
    inner = tokenizer
    if hasattr(inner, "instruct_tokenizer"):
        inner = inner.instruct_tokenizer
    if hasattr(inner, "tokenizer") and not hasattr(inner, "n_words"):
        inner = inner.tokenizer

    def encode(text: str) -> list[int]:
        return list(inner.encode(text, bos=False, eos=False))

    if hasattr(inner, "id_to_byte_piece") and hasattr(inner, "num_special_tokens"):
        kind = KIND_TEKKEN
        num_special = int(inner.num_special_tokens)
        entries: list[bytes | None] = [b""] * num_special
        entries.extend(inner.id_to_byte_piece(i) for i in range(num_special, inner.n_words))
        special_ids = set(range(num_special)) | {int(i) for i in inner.special_ids}
    elif hasattr(inner, "n_words") and hasattr(inner, "is_special"):
        kind = KIND_SENTENCEPIECE
        sp_model = getattr(inner, "_model", None)
        if not hasattr(sp_model, "id_to_piece"):
            # Private attribute gone in some version: reload the model file instead.
            import sentencepiece

            sp_model = sentencepiece.SentencePieceProcessor(model_file=str(inner.file_path))
        entries, special_ids = sentencepiece_entries(sp_model)
        special_ids |= {int(i) for i in inner.special_ids}
    else:
        raise VocabularyError(
            f"unsupported mistral_common tokenizer type {type_name_of(tokenizer)}: expected a "
            "Tekkenizer, a SentencePieceTokenizer or a MistralTokenizer wrapping one"
        )
    return assemble_vocabulary(
        kind=kind,
        entries=entries,
        special_ids=special_ids,
        vocab_size=vocab_size,
        eos_token_ids=eos_token_ids,
        default_eos_ids=valid_ids([inner.eos_id]),
        add_prefix_space=encode,
        source=type_name_of(inner),
    )
