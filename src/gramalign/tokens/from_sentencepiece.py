"""Token bytes of a SentencePiece model (a ``.model`` file or a loaded processor).

Pieces spell a space as ``▁``; byte pieces (``<0xNN>``) are the single byte NN; control,
unknown and unused pieces are special. The processor is asked for every id at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gramalign.errors import VocabularyError

from .byte_conventions import BYTE_FALLBACK_PIECES, KIND_SENTENCEPIECE, SENTENCEPIECE_SPACE, parse_byte_piece
from .eos import valid_ids
from .vocabulary import Vocabulary, assemble_vocabulary, type_name_of

if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    import sentencepiece


def vocabulary_from_sentencepiece(
    model: str | os.PathLike[str] | sentencepiece.SentencePieceProcessor,
    *,
    vocab_size: int | None = None,
    eos_token_ids: int | Iterable[int] | None = None,
) -> Vocabulary:
    """:meth:`Vocabulary.from_sentencepiece`, documented there."""
    if isinstance(model, (str, os.PathLike)):
        import sentencepiece

        path = os.fspath(model)
        if not os.path.isfile(path):
            raise VocabularyError(f"SentencePiece model file {path!r} does not exist")
        try:
            model = sentencepiece.SentencePieceProcessor(model_file=path)
        except Exception as error:  # sentencepiece raises bare RuntimeError/OSError
            raise VocabularyError(f"cannot load SentencePiece model {path!r}: {error}") from error
    if not hasattr(model, "id_to_piece") or not hasattr(model, "is_control"):
        raise VocabularyError(f"expected a SentencePieceProcessor, got {type_name_of(model)}")
    entries, special_ids = sentencepiece_entries(model)

    def encode(text: str) -> list[int]:
        return list(model.encode(text))

    return assemble_vocabulary(
        kind=KIND_SENTENCEPIECE,
        entries=entries,
        special_ids=special_ids,
        vocab_size=vocab_size,
        eos_token_ids=eos_token_ids,
        default_eos_ids=valid_ids([model.eos_id()]),
        add_prefix_space=encode,
        source="SentencePiece model",
    )


def sentencepiece_entries(model: Any) -> tuple[list[bytes | None], set[int]]:
    """Per-id bytes and special ids of a ``SentencePieceProcessor``."""
    ids = list(range(model.get_piece_size()))
    # The processor's methods accept lists, which keeps the loop out of Python.
    pieces = model.id_to_piece(ids)
    is_special = [
        control or unknown or unused
        for control, unknown, unused in zip(
            model.is_control(ids), model.is_unknown(ids), model.is_unused(ids), strict=True
        )
    ]
    is_byte = model.is_byte(ids)
    entries: list[bytes | None] = []
    special_ids: set[int] = set()
    for token_id, piece in enumerate(pieces):
        if is_special[token_id]:
            special_ids.add(token_id)
            entries.append(b"")
        elif is_byte[token_id]:
            entries.append(BYTE_FALLBACK_PIECES.get(piece) or parse_byte_piece(piece, token_id))
        else:
            entries.append(piece.replace(SENTENCEPIECE_SPACE, " ").encode("utf-8"))
    return entries, special_ids
