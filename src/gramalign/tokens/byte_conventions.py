"""How tokenizers spell bytes in their token strings, and how to undo it token by token.

A token string is not the text it stands for: byte-level BPE (GPT-2 and its descendants)
writes every byte as one printable character of its own alphabet, SentencePiece writes a
space as ``▁`` and a byte it has no piece for as ``<0xNN>``, ByT5 has one id per byte.
Everything here is context-free: the bytes of a token never depend on its neighbours, and a
string that cannot be undone exactly is an error or falls back to its UTF-8 (as the
``tokenizers`` decoders do), never a guess. No tokenizer library is imported here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gramalign.errors import VocabularyError

KIND_BYTE_LEVEL = "byte_level"
KIND_SENTENCEPIECE = "sentencepiece"
KIND_TIKTOKEN = "tiktoken"
KIND_TEKKEN = "tekken"
KIND_RAW = "raw"
"""Token strings (or bytes) are the literal text, with no encoding convention on top."""

SENTENCEPIECE_SPACE = "\u2581"  # "▁"

BYTE_FALLBACK_PIECES = {f"<0x{value:02X}>": bytes([value]) for value in range(256)}


def _gpt2_byte_alphabet() -> dict[int, str]:
    """GPT-2's reversible byte -> character map.

    Bytes that are printable Latin-1 characters stand for themselves; the 68 others
    (controls, space, NBSP, soft hyphen) are moved to U+0100 onward, in byte order, so
    that no token string contains whitespace or control characters.
    """
    printable = [
        byte
        for byte in range(256)
        if 0x21 <= byte <= 0x7E or 0xA1 <= byte <= 0xAC or 0xAE <= byte <= 0xFF
    ]
    alphabet = {byte: chr(byte) for byte in printable}
    next_code_point = 256
    for byte in range(256):
        if byte not in alphabet:
            alphabet[byte] = chr(next_code_point)
            next_code_point += 1
    return alphabet


GPT2_BYTE_DECODER = {char: byte for byte, char in _gpt2_byte_alphabet().items()}


def _byte_level_translation(byte_decoder: Mapping[str, int]) -> dict[int, str]:
    """A ``str.translate`` table turning alphabet characters into code points 0..255.

    The translated string is then encoded as Latin-1, which maps code points 0..255 to
    the same byte values. Characters below 256 that are not in the alphabet are mapped to
    a lone surrogate so that the Latin-1 step fails for them instead of passing them
    through as if they were bytes.
    """
    table: dict[int, str] = {ord(char): chr(byte) for char, byte in byte_decoder.items()}
    for code_point in range(256):
        table.setdefault(code_point, "\ud800")
    return table


GPT2_TRANSLATION = _byte_level_translation(GPT2_BYTE_DECODER)


@dataclass(frozen=True)
class PieceDecoding:
    """How one token string turns into bytes, per token and without context.

    ``replacements`` run first, in order; then the string is either mapped through a
    byte-level alphabet or encoded as UTF-8. ``byte_fallback`` pieces (``<0xNN>``) are the
    single byte NN and skip both steps.
    """

    kind: str
    replacements: tuple[tuple[str, str], ...] = ()
    byte_fallback: bool = False
    byte_level_translation: Mapping[int, str] | None = None

    def to_bytes(self, pieces: Sequence[str | None]) -> list[bytes | None]:
        fallback = BYTE_FALLBACK_PIECES if self.byte_fallback else {}
        translation = self.byte_level_translation
        decoded: list[bytes | None] = []
        for piece in pieces:
            if piece is None:
                decoded.append(None)
                continue
            single_byte = fallback.get(piece)
            if single_byte is not None:
                decoded.append(single_byte)
                continue
            for old, new in self.replacements:
                piece = piece.replace(old, new)
            if translation is None:
                decoded.append(piece.encode("utf-8"))
                continue
            try:
                decoded.append(piece.translate(translation).encode("latin-1"))
            except UnicodeEncodeError:
                # A character outside the byte alphabet: the ByteLevel decoder of
                # `tokenizers` then emits the whole token as plain UTF-8, and so do we.
                decoded.append(piece.encode("utf-8"))
        return decoded


_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def parse_byte_piece(piece: str, token_id: int) -> bytes:
    match = _BYTE_PIECE.fullmatch(piece)
    if match is None:
        raise VocabularyError(f"byte piece {piece!r} (token id {token_id}) is not of the form <0xNN>")
    return bytes([int(match.group(1), 16)])


def byte_level_entries(
    encoder: Mapping[str, int], byte_decoder: Mapping[str, int]
) -> tuple[list[bytes | None], set[int]]:
    """Per-id bytes of a slow byte-level BPE tokenizer (its own alphabet, from ``byte_decoder``)."""
    num_entries = max(encoder.values(), default=-1) + 1
    pieces: list[str | None] = [None] * num_entries
    for piece, token_id in encoder.items():
        pieces[token_id] = piece
    translation = (
        GPT2_TRANSLATION
        if dict(byte_decoder) == GPT2_BYTE_DECODER
        else _byte_level_translation(byte_decoder)
    )
    decoding = PieceDecoding(kind=KIND_BYTE_LEVEL, byte_level_translation=translation)
    return decoding.to_bytes(pieces), set()


def byt5_entries(offset: int) -> tuple[list[bytes | None], set[int]]:
    """ByT5: ``offset`` special ids, then one id per byte value."""
    entries: list[bytes | None] = [b""] * offset
    entries.extend(bytes([value]) for value in range(256))
    return entries, set(range(offset))
