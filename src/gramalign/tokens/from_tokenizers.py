"""Token bytes of a ``tokenizers.Tokenizer``, read from its serialized components.

The decoder (or, lacking one, the pre-tokenizer and normalizer) says which convention the
token strings follow; only decoders that work token by token are accepted (ByteLevel,
ByteFallback, Metaspace, Replace, Fuse, Strip), so the bytes of a token never depend on its
neighbours. Added tokens and the unknown token are special.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from gramalign.errors import VocabularyError

from .byte_conventions import (GPT2_TRANSLATION, KIND_BYTE_LEVEL, KIND_RAW, KIND_SENTENCEPIECE, SENTENCEPIECE_SPACE,
                               PieceDecoding)
from .eos import conventional_eos_ids
from .vocabulary import Vocabulary, assemble_vocabulary, type_name_of

if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    import tokenizers


def vocabulary_from_tokenizers(
    tokenizer: tokenizers.Tokenizer,
    *,
    vocab_size: int | None = None,
    eos_token_ids: int | Iterable[int] | None = None,
) -> Vocabulary:
    """:meth:`Vocabulary.from_tokenizers`, documented there."""
    entries, special_ids, kind = tokenizers_entries(tokenizer)
    default_eos = conventional_eos_ids(tokenizer)

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False).ids

    return assemble_vocabulary(
        kind=kind,
        entries=entries,
        special_ids=special_ids,
        vocab_size=vocab_size,
        eos_token_ids=eos_token_ids,
        default_eos_ids=default_eos,
        add_prefix_space=encode,
        source="tokenizers.Tokenizer",
    )


def _component_state(component: Any) -> Any:
    """JSON description of a normalizer/pre-tokenizer/decoder/model (None when absent)."""
    if component is None:
        return None
    try:
        return json.loads(component.__getstate__())
    except Exception as error:  # custom Python components cannot be serialized
        raise VocabularyError(f"cannot read tokenizer component {component!r}: {error}") from error


def _flatten_steps(state: Any, list_key: str) -> list[dict[str, Any]]:
    """The leaf steps of a component, with ``Sequence`` wrappers expanded in order."""
    if state is None:
        return []
    if state.get("type") == "Sequence":
        steps: list[dict[str, Any]] = []
        for child in state.get(list_key, []):
            steps.extend(_flatten_steps(child, list_key))
        return steps
    return [state]


def _piece_decoding_for(tokenizer: tokenizers.Tokenizer) -> PieceDecoding:
    """Read the decoder (or, lacking one, the pre-tokenizer) to learn the piece convention."""
    decoder_steps = _flatten_steps(_component_state(tokenizer.decoder), "decoders")
    if not decoder_steps:
        return _piece_decoding_without_decoder(tokenizer)

    replacements: list[tuple[str, str]] = []
    byte_fallback = False
    byte_level = False
    for step in decoder_steps:
        step_type = step.get("type")
        if step_type in ("Fuse", "Strip"):
            # Fuse only joins tokens; Strip trims the start/end of the whole decoded
            # text (the dummy-prefix space), not individual tokens.
            continue
        if byte_level:
            raise VocabularyError(
                f"unsupported tokenizer decoder: {step_type} after ByteLevel in {decoder_steps}"
            )
        if step_type == "ByteLevel":
            byte_level = True
        elif step_type == "ByteFallback":
            byte_fallback = True
        elif step_type == "Replace":
            pattern = step.get("pattern", {})
            if "String" not in pattern:
                raise VocabularyError(f"unsupported tokenizer decoder: Replace with pattern {pattern}")
            replacements.append((pattern["String"], step.get("content", "")))
        elif step_type == "Metaspace":
            replacements.append((step.get("replacement", SENTENCEPIECE_SPACE), " "))
        else:
            raise VocabularyError(
                f"unsupported tokenizer decoder {step_type!r}: token bytes cannot be recovered "
                "token by token (supported: ByteLevel, ByteFallback, Metaspace, Replace, Fuse, Strip)"
            )

    if byte_level:
        kind = KIND_BYTE_LEVEL
    elif any(old == SENTENCEPIECE_SPACE and new == " " for old, new in replacements):
        kind = KIND_SENTENCEPIECE
    else:
        kind = KIND_RAW
    return PieceDecoding(
        kind=kind,
        replacements=tuple(replacements),
        byte_fallback=byte_fallback,
        byte_level_translation=GPT2_TRANSLATION if byte_level else None,
    )


def _piece_decoding_without_decoder(tokenizer: tokenizers.Tokenizer) -> PieceDecoding:
    """Without a decoder, `tokenizers` joins tokens with spaces; infer the model's intent."""
    pre_steps = _flatten_steps(_component_state(tokenizer.pre_tokenizer), "pretokenizers")
    normalizer_steps = _flatten_steps(_component_state(tokenizer.normalizer), "normalizers")
    if any(step.get("type") == "ByteLevel" for step in pre_steps):
        return PieceDecoding(kind=KIND_BYTE_LEVEL, byte_level_translation=GPT2_TRANSLATION)
    escapes_spaces = any(step.get("type") == "Metaspace" for step in pre_steps) or any(
        step.get("type") == "Replace" and step.get("content") == SENTENCEPIECE_SPACE
        for step in normalizer_steps
    )
    if escapes_spaces:
        return PieceDecoding(
            kind=KIND_SENTENCEPIECE,
            replacements=((SENTENCEPIECE_SPACE, " "),),
            byte_fallback=True,
        )
    raise VocabularyError(
        "unsupported tokenizer: it has no decoder, and neither its pre-tokenizer "
        f"({[s.get('type') for s in pre_steps]}) nor its normalizer "
        f"({[s.get('type') for s in normalizer_steps]}) reveals a byte-level or "
        "SentencePiece convention"
    )


def tokenizers_entries(tokenizer: Any) -> tuple[list[bytes | None], set[int], str]:
    """Per-id bytes, special ids and kind of a ``tokenizers.Tokenizer``."""
    if not hasattr(tokenizer, "get_vocab") or not hasattr(tokenizer, "get_added_tokens_decoder"):
        raise VocabularyError(f"expected a tokenizers.Tokenizer, got {type_name_of(tokenizer)}")
    model = tokenizer.model
    model_type = type(model).__name__
    if model_type == "WordPiece":
        raise VocabularyError(
            "unsupported tokenizer model WordPiece: its decoder inserts spaces between words, "
            "so tokens have no context-free bytes"
        )
    decoding = _piece_decoding_for(tokenizer)

    model_vocab: dict[str, int] = tokenizer.get_vocab(with_added_tokens=False)
    added = tokenizer.get_added_tokens_decoder()
    num_entries = max(max(model_vocab.values(), default=-1), max(added, default=-1)) + 1
    pieces: list[str | None] = [None] * num_entries
    for piece, token_id in model_vocab.items():
        pieces[token_id] = piece
    entries = decoding.to_bytes(pieces)

    special_ids = set(added)
    unk_id = _unknown_token_id(model, model_type, model_vocab)
    if unk_id is not None:
        special_ids.add(unk_id)
    return entries, special_ids, decoding.kind


def _unknown_token_id(model: Any, model_type: str, model_vocab: Mapping[str, int]) -> int | None:
    if model_type == "Unigram":
        # The Unigram model exposes no unk accessor; its serialized form has it.
        return _component_state(model).get("unk_id")
    unk_token = getattr(model, "unk_token", None)
    if unk_token is None:
        return None
    return model_vocab.get(unk_token)
