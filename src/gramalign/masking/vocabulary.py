"""The exact bytes behind every token id of a tokenizer.

Grammar masks are computed over bytes, so each token id must be mapped to the byte string
it contributes to the decoded output. Tokenizers hide those bytes behind different
conventions (GPT-2's printable byte alphabet, SentencePiece's ``▁`` and ``<0xNN>`` pieces,
tiktoken's raw ranks, ...); :class:`Vocabulary` undoes them once, up front.

Special, added, control and unknown tokens get ``b""`` and are listed in
``special_token_ids``: a grammar never allows them. End-of-sequence ids are kept apart in
``eos_token_ids`` because a grammar allows them exactly where it accepts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from gramalign.errors import VocabularyError

if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    import sentencepiece
    import tiktoken
    import tokenizers

KIND_BYTE_LEVEL = "byte_level"
KIND_SENTENCEPIECE = "sentencepiece"
KIND_TIKTOKEN = "tiktoken"
KIND_TEKKEN = "tekken"
KIND_RAW = "raw"
"""Token strings (or bytes) are the literal text, with no encoding convention on top."""

SENTENCEPIECE_SPACE = "\u2581"  # "▁"

# Names under which tokenizers without an explicit eos setting (raw ``tokenizers`` and
# tiktoken objects) mark the end of a sequence or of a chat turn.
_CONVENTIONAL_EOS_NAMES = frozenset(
    {
        "</s>",
        "<eos>",
        "<|endoftext|>",
        "<|end_of_text|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|im_end|>",
        "<|end|>",
        "<end_of_turn>",
    }
)

# Text whose encoding reveals whether a tokenizer prepends a space ("dummy prefix").
_PREFIX_SPACE_PROBE = "a"

_BYTE_FALLBACK_PIECES = {f"<0x{value:02X}>": bytes([value]) for value in range(256)}


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


_GPT2_BYTE_DECODER = {char: byte for byte, char in _gpt2_byte_alphabet().items()}


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


_GPT2_TRANSLATION = _byte_level_translation(_GPT2_BYTE_DECODER)


@dataclass(frozen=True)
class _PieceDecoding:
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
        fallback = _BYTE_FALLBACK_PIECES if self.byte_fallback else {}
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


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """The bytes of every token id, plus which ids are special or end a sequence.

    Build one with a ``from_*`` class method rather than directly. Instances are
    immutable; equality is identity, and :attr:`fingerprint` identifies the content.
    """

    token_bytes: tuple[bytes, ...]
    """Index = token id, for ids < ``len(token_bytes)``; ``b""`` for special ids."""
    size: int
    """Width of the model's logits (>= ``num_tokens``); larger ids are padding."""
    special_token_ids: frozenset[int]
    """Added, special, control and unknown ids (and unassigned ids): never allowed."""
    eos_token_ids: tuple[int, ...]
    """End-of-sequence ids, allowed only where the grammar accepts."""
    kind: str
    """Encoding convention the bytes were recovered from (``"byte_level"``, ...)."""
    add_prefix_space: bool = False
    """The tokenizer prepends a space when encoding (SentencePiece's "dummy prefix")."""

    def __post_init__(self) -> None:
        # Accept any iterables but store the documented immutable types.
        object.__setattr__(self, "token_bytes", tuple(self.token_bytes))
        object.__setattr__(self, "special_token_ids", frozenset(int(i) for i in self.special_token_ids))
        object.__setattr__(self, "eos_token_ids", tuple(int(i) for i in self.eos_token_ids))
        object.__setattr__(self, "size", int(self.size))
        object.__setattr__(self, "add_prefix_space", bool(self.add_prefix_space))

        num_tokens = len(self.token_bytes)
        if not all(type(data) is bytes for data in self.token_bytes):
            bad = next(i for i, data in enumerate(self.token_bytes) if type(data) is not bytes)
            raise VocabularyError(
                f"token_bytes[{bad}] is {type(self.token_bytes[bad]).__name__}, expected bytes"
            )
        if self.size < num_tokens:
            raise VocabularyError(f"size {self.size} is smaller than the {num_tokens} token entries")
        out_of_range = sorted(i for i in self.special_token_ids if not 0 <= i < num_tokens)
        if out_of_range:
            raise VocabularyError(
                f"special token ids {out_of_range[:5]} are outside [0, {num_tokens})"
            )
        with_bytes = sorted(i for i in self.special_token_ids if self.token_bytes[i])
        if with_bytes:
            raise VocabularyError(f"special token ids {with_bytes[:5]} must have empty bytes")
        _check_eos_ids(self.eos_token_ids, self.size)

    def __repr__(self) -> str:
        return (
            f"Vocabulary(kind={self.kind!r}, num_tokens={self.num_tokens}, size={self.size}, "
            f"specials={len(self.special_token_ids)}, eos_token_ids={self.eos_token_ids}, "
            f"add_prefix_space={self.add_prefix_space})"
        )

    # ------------------------------------------------------------------ queries

    @property
    def num_tokens(self) -> int:
        """Number of ids that have an entry in ``token_bytes``."""
        return len(self.token_bytes)

    def token_to_bytes(self, token_id: int) -> bytes:
        """Bytes of one id; ``b""`` for special and padding ids."""
        if not 0 <= token_id < self.size:
            raise VocabularyError(f"token id {token_id} is out of range [0, {self.size})")
        if token_id >= self.num_tokens:
            return b""
        return self.token_bytes[token_id]

    def decode_bytes(self, token_ids: Iterable[int]) -> bytes:
        """Concatenated bytes of several ids (special ids contribute nothing)."""
        return b"".join(self.token_to_bytes(int(token_id)) for token_id in token_ids)

    def grammar_token_ids(self) -> np.ndarray:
        """Ids a grammar may ever allow as text: non-special, non-EOS, non-empty, below
        ``num_tokens`` (EOS is only ever the end, never its bytes).

        The returned int32 array is shared and read-only.
        """
        return self._grammar_token_ids

    @cached_property
    def _grammar_token_ids(self) -> np.ndarray:
        specials = self.special_token_ids | set(self.eos_token_ids)
        ids = np.fromiter(
            (i for i, data in enumerate(self.token_bytes) if data and i not in specials),
            dtype=np.int32,
        )
        ids.flags.writeable = False
        return ids

    @cached_property
    def grammar_token_mask(self) -> np.ndarray:
        """bool array of length ``size``, True for :meth:`grammar_token_ids`. Shared and
        read-only: every compiled grammar of the vocabulary uses it (building it was most of
        a compile's fixed cost)."""
        mask = np.zeros(self.size, dtype=bool)
        mask[self._grammar_token_ids] = True
        mask.flags.writeable = False
        return mask

    @cached_property
    def eos_bitmask(self) -> np.ndarray:
        """One bitmask row (uint32 words) with the bits of the EOS ids set. Shared and read-only."""
        from .bitmask import bitmask_width

        words = np.zeros(bitmask_width(self.size), dtype=np.uint32)
        for token in self.eos_token_ids:
            words[token >> 5] |= np.uint32(1 << (token & 31))
        words.flags.writeable = False
        return words

    @cached_property
    def first_bytes(self) -> np.ndarray:
        """int16 array of length ``size``: the first byte of each grammar token, -1 for the rest
        (special, EOS, empty and padding ids). Shared and read-only."""
        first = np.full(self.size, -1, dtype=np.int16)
        ids = self._grammar_token_ids
        first[ids] = np.fromiter((self.token_bytes[i][0] for i in ids.tolist()), dtype=np.int16, count=ids.size)
        first.flags.writeable = False
        return first

    @cached_property
    def first_byte_masks(self) -> np.ndarray:
        """uint32 ``[256, ceil(size/32)]`` bitmask rows: row ``b`` holds the grammar tokens whose
        first byte is ``b`` (so "every allowed token starts with b" is one AND). Read-only."""
        words = (self.size + 31) // 32
        masks = np.zeros((256, words), dtype=np.uint32)
        ids = self._grammar_token_ids.astype(np.int64)
        np.bitwise_or.at(masks, (self.first_bytes[ids].astype(np.int64), ids >> 5),
                         np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
        masks.flags.writeable = False
        return masks

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 hex digest of everything a compiled mask depends on."""
        header = {
            "kind": self.kind,
            "size": self.size,
            "num_tokens": self.num_tokens,
            "eos_token_ids": list(self.eos_token_ids),
            "special_token_ids": sorted(self.special_token_ids),
            "add_prefix_space": self.add_prefix_space,
        }
        digest = hashlib.sha256()
        digest.update(json.dumps(header, sort_keys=True).encode("utf-8"))
        # Lengths first, so that token boundaries are part of the hash.
        lengths = np.fromiter((len(data) for data in self.token_bytes), dtype="<u4", count=self.num_tokens)
        digest.update(lengths.tobytes())
        digest.update(b"".join(self.token_bytes))
        return digest.hexdigest()

    # ------------------------------------------------------------- constructors

    @classmethod
    def from_token_bytes(
        cls,
        token_bytes: Sequence[bytes],
        *,
        eos_token_ids: int | Iterable[int],
        special_token_ids: Iterable[int] = (),
        vocab_size: int | None = None,
        kind: str = KIND_RAW,
        add_prefix_space: bool = False,
    ) -> Vocabulary:
        """A vocabulary from explicit bytes (handy for tests and custom tokenizers).

        Entries of ``special_token_ids`` are blanked to ``b""``.
        """
        specials = {int(i) for i in special_token_ids}
        entries: list[bytes | None] = []
        for token_id, data in enumerate(token_bytes):
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise VocabularyError(f"token_bytes[{token_id}] is {type(data).__name__}, expected bytes")
            entries.append(bytes(data))
        for token_id in specials:
            if 0 <= token_id < len(entries):
                entries[token_id] = b""
        return _assemble(
            kind=kind,
            entries=entries,
            special_ids=specials,
            vocab_size=vocab_size,
            eos_token_ids=eos_token_ids,
            default_eos_ids=(),
            add_prefix_space=add_prefix_space,
            source=f"{kind} token list",
        )

    @classmethod
    def from_tokenizers(
        cls,
        tokenizer: tokenizers.Tokenizer,
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a ``tokenizers.Tokenizer`` (the backend of every HF fast tokenizer).

        A raw ``Tokenizer`` has no notion of eos; by default every added special token
        with a conventional end name (``</s>``, ``<|endoftext|>``, ``<|eot_id|>``,
        ``<|im_end|>``, ...) is taken.
        """
        entries, special_ids, kind = _tokenizers_entries(tokenizer)
        default_eos = _conventional_eos_ids(tokenizer)

        def encode(text: str) -> list[int]:
            return tokenizer.encode(text, add_special_tokens=False).ids

        return _assemble(
            kind=kind,
            entries=entries,
            special_ids=special_ids,
            vocab_size=vocab_size,
            eos_token_ids=eos_token_ids,
            default_eos_ids=default_eos,
            add_prefix_space=encode,
            source="tokenizers.Tokenizer",
        )

    @classmethod
    def from_hf(
        cls,
        tokenizer: Any,
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
        model: Any = None,
    ) -> Vocabulary:
        """From a ``transformers`` tokenizer, fast or slow.

        Supported: every fast (``tokenizers``-backed) tokenizer; slow SentencePiece ones
        (``sp_model``); slow byte-level BPE ones (``encoder`` + ``byte_decoder``, like
        GPT-2's in transformers 4); ByT5; and ``MistralCommonBackend``.

        Pass the ``model`` the vocabulary is for (what :func:`gramalign.vocabulary_for_model`
        does): the size then defaults to its logits width and the EOS ids to its generation
        config's ``eos_token_id``, which is where chat models say what ends a turn. Without
        it (and without ``eos_token_ids``) the EOS is ``tokenizer.eos_token_id``, with a
        warning when that token looks like a start marker (``<|im_start|>``, ``<s>``,
        ``<|begin_of_text|>``), as in SmolLM2's GGUF tokenizer: generation would then never
        end where the grammar allows. ``vocab_size`` overrides the width.
        """
        model_eos: list[int] = []
        if model is not None:
            width, model_eos = _model_width_and_eos(model)
            if vocab_size is None:
                vocab_size = width
            if eos_token_ids is None and model_eos:
                eos_token_ids = model_eos
        mistral = getattr(tokenizer, "tokenizer", None)
        if mistral is not None and hasattr(mistral, "instruct_tokenizer"):
            return cls.from_mistral(mistral, vocab_size=vocab_size, eos_token_ids=eos_token_ids)

        backend = getattr(tokenizer, "backend_tokenizer", None)
        sp_model = getattr(tokenizer, "sp_model", None)
        byte_decoder = getattr(tokenizer, "byte_decoder", None)
        encoder = getattr(tokenizer, "encoder", None)
        default_eos: list[int] = []
        if backend is not None:
            entries, special_ids, kind = _tokenizers_entries(backend)
            default_eos = _conventional_eos_ids(backend)
        elif sp_model is not None:
            entries, special_ids = _sentencepiece_entries(sp_model)
            kind = KIND_SENTENCEPIECE
            default_eos = _valid_ids([sp_model.eos_id()])
        elif isinstance(byte_decoder, Mapping) and isinstance(encoder, Mapping):
            entries, special_ids = _byte_level_entries(encoder, byte_decoder)
            kind = KIND_BYTE_LEVEL
        elif type(tokenizer).__name__ == "ByT5Tokenizer" and isinstance(getattr(tokenizer, "offset", None), int):
            entries, special_ids = _byt5_entries(tokenizer.offset)
            kind = KIND_RAW
        else:
            raise VocabularyError(
                f"unsupported Hugging Face tokenizer type {_type_name(tokenizer)}: it has no "
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
        if eos_token_ids is None:
            _warn_start_marker_eos(tokenizer, default_eos, source=_type_name(tokenizer))

        def encode(text: str) -> list[int]:
            return list(tokenizer.encode(text, add_special_tokens=False))

        return _assemble(
            kind=kind,
            entries=entries,
            special_ids=special_ids,
            vocab_size=vocab_size,
            eos_token_ids=eos_token_ids,
            default_eos_ids=default_eos,
            add_prefix_space=encode,
            source=_type_name(tokenizer),
        )

    @classmethod
    def from_tiktoken(
        cls,
        encoding: tiktoken.Encoding,
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a ``tiktoken.Encoding``; ids missing from a gapped range count as special.

        The default eos is every special token with a conventional end name
        (``<|endoftext|>``, ...).
        """
        if not hasattr(encoding, "decode_single_token_bytes") or not hasattr(encoding, "special_tokens_set"):
            raise VocabularyError(f"expected a tiktoken.Encoding, got {_type_name(encoding)}")
        named_specials = {name: encoding.encode_single_token(name) for name in encoding.special_tokens_set}
        special_ids = set(named_specials.values())
        entries: list[bytes | None] = []
        for token_id in range(encoding.n_vocab):
            if token_id in special_ids:
                entries.append(b"")
                continue
            try:
                entries.append(encoding.decode_single_token_bytes(token_id))
            except KeyError:
                entries.append(None)
        default_eos = sorted(i for name, i in named_specials.items() if name in _CONVENTIONAL_EOS_NAMES)
        return _assemble(
            kind=KIND_TIKTOKEN,
            entries=entries,
            special_ids=special_ids,
            vocab_size=vocab_size,
            eos_token_ids=eos_token_ids,
            default_eos_ids=default_eos,
            add_prefix_space=False,
            source=f"tiktoken encoding {encoding.name!r}",
        )

    @classmethod
    def from_sentencepiece(
        cls,
        model: str | os.PathLike[str] | sentencepiece.SentencePieceProcessor,
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a SentencePiece model file or a loaded ``SentencePieceProcessor``."""
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
            raise VocabularyError(f"expected a SentencePieceProcessor, got {_type_name(model)}")
        entries, special_ids = _sentencepiece_entries(model)

        def encode(text: str) -> list[int]:
            return list(model.encode(text))

        return _assemble(
            kind=KIND_SENTENCEPIECE,
            entries=entries,
            special_ids=special_ids,
            vocab_size=vocab_size,
            eos_token_ids=eos_token_ids,
            default_eos_ids=_valid_ids([model.eos_id()]),
            add_prefix_space=encode,
            source="SentencePiece model",
        )

    @classmethod
    def from_mistral(
        cls,
        tokenizer: Any,
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a ``mistral_common`` tokenizer: ``Tekkenizer`` or ``SentencePieceTokenizer``.

        Accepts the ``MistralTokenizer`` wrapper (or its instruct tokenizer) as well as
        the inner tokenizer.
        """
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
            entries, special_ids = _sentencepiece_entries(sp_model)
            special_ids |= {int(i) for i in inner.special_ids}
        else:
            raise VocabularyError(
                f"unsupported mistral_common tokenizer type {_type_name(tokenizer)}: expected a "
                "Tekkenizer, a SentencePieceTokenizer or a MistralTokenizer wrapping one"
            )
        return _assemble(
            kind=kind,
            entries=entries,
            special_ids=special_ids,
            vocab_size=vocab_size,
            eos_token_ids=eos_token_ids,
            default_eos_ids=_valid_ids([inner.eos_id]),
            add_prefix_space=encode,
            source=_type_name(inner),
        )

    @classmethod
    def from_any(
        cls,
        tokenizer: Any,
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
    ) -> Vocabulary:
        """Dispatch on the tokenizer's type to the matching ``from_*`` constructor."""
        options = {"vocab_size": vocab_size, "eos_token_ids": eos_token_ids}
        module = type(tokenizer).__module__
        if isinstance(tokenizer, (str, os.PathLike)) or module.startswith("sentencepiece"):
            return cls.from_sentencepiece(tokenizer, **options)
        if module.startswith("tiktoken"):
            return cls.from_tiktoken(tokenizer, **options)
        if module.startswith("tokenizers"):
            return cls.from_tokenizers(tokenizer, **options)
        if module.startswith("mistral_common"):
            return cls.from_mistral(tokenizer, **options)
        if module.startswith("transformers") or hasattr(tokenizer, "all_special_ids"):
            return cls.from_hf(tokenizer, **options)
        raise VocabularyError(f"unsupported tokenizer type {_type_name(tokenizer)}")


# ---------------------------------------------------------------------- helpers


def _type_name(obj: object) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _valid_ids(ids: Iterable[int | None]) -> list[int]:
    """Drop the ``None``/negative values libraries use for "no such token"."""
    return [int(i) for i in ids if i is not None and int(i) >= 0]


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
    ids = [] if eos is None else _valid_ids(eos if isinstance(eos, (list, tuple)) else [eos])
    return width, ids


_START_MARKER = re.compile(r"start|begin|^<s>$|^<bos>$", re.IGNORECASE)


def _warn_start_marker_eos(tokenizer: Any, eos_ids: Sequence[int], *, source: str) -> None:
    """Warn when the tokenizer's EOS is named like the start of a text or turn."""
    try:
        names = tokenizer.convert_ids_to_tokens(list(eos_ids))
    except Exception:  # a foreign tokenizer without the method: nothing to judge by
        return
    starts = [name for name in names if isinstance(name, str) and _START_MARKER.search(name)]
    if starts:
        warnings.warn(
            f"the {source}'s eos_token is {starts[0]!r}, which looks like a start marker: generation would not "
            "end where the grammar allows. Build the vocabulary with gramalign.vocabulary_for_model(tokenizer, "
            "model) (the model's generation config names the real EOS) or pass eos_token_ids=",
            UserWarning, stacklevel=3)


def _check_eos_ids(eos_ids: Sequence[int], size: int) -> None:
    if not eos_ids:
        raise VocabularyError("at least one eos token id is required")
    for token_id in eos_ids:
        if not 0 <= token_id < size:
            raise VocabularyError(f"eos token id {token_id} is out of range [0, {size})")


def _assemble(
    *,
    kind: str,
    entries: Sequence[bytes | None],
    special_ids: Iterable[int],
    vocab_size: int | None,
    eos_token_ids: int | Iterable[int] | None,
    default_eos_ids: Iterable[int],
    add_prefix_space: bool | Callable[[str], list[int]],
    source: str,
) -> Vocabulary:
    """Turn per-id entries (``None`` = unassigned id) into a validated Vocabulary.

    Unassigned ids and ids listed in ``special_ids`` become ``b""`` specials. The logits
    width ``vocab_size`` may exceed the tokenizer (padding ids) or cut off trailing ids,
    but only ids that are special anyway.
    """
    special = {int(i) for i in special_ids if int(i) >= 0}
    num_entries = max(len(entries), max(special, default=-1) + 1)
    token_bytes: list[bytes] = []
    for token_id in range(num_entries):
        data = entries[token_id] if token_id < len(entries) else None
        if data is None or token_id in special:
            special.add(token_id)
            data = b""
        token_bytes.append(data)

    if vocab_size is None:
        size = num_entries
    else:
        size = int(vocab_size)
        if size <= 0:
            raise VocabularyError(f"vocab_size must be positive, got {vocab_size}")
        if size < num_entries:
            dropped_text = [i for i in range(size, num_entries) if i not in special]
            if dropped_text:
                raise VocabularyError(
                    f"vocab_size {size} is smaller than the {num_entries} ids of the {source}, "
                    f"and the ids it cuts off include regular tokens (first: {dropped_text[0]} = "
                    f"{token_bytes[dropped_text[0]]!r}); only trailing special/added tokens may be "
                    "dropped. Is this the right tokenizer for the model?"
                )
            del token_bytes[size:]
            special = {i for i in special if i < size}

    if eos_token_ids is None:
        eos = list(dict.fromkeys(int(i) for i in default_eos_ids))
        if not eos:
            raise VocabularyError(f"the {source} declares no eos token; pass eos_token_ids=")
    elif isinstance(eos_token_ids, (int, np.integer)):
        eos = [int(eos_token_ids)]
    else:
        eos = list(dict.fromkeys(int(i) for i in eos_token_ids))
    _check_eos_ids(eos, size)

    if callable(add_prefix_space):
        add_prefix_space = _prepends_space(add_prefix_space, token_bytes)

    return Vocabulary(
        token_bytes=tuple(token_bytes),
        size=size,
        special_token_ids=frozenset(special),
        eos_token_ids=tuple(eos),
        kind=kind,
        add_prefix_space=add_prefix_space,
    )


def _prepends_space(encode: Callable[[str], list[int]], token_bytes: Sequence[bytes]) -> bool:
    """Whether encoding text that starts without a space yields bytes that start with one."""
    try:
        ids = encode(_PREFIX_SPACE_PROBE)
    except Exception as error:  # any failure of a foreign encode() is a setup problem
        raise VocabularyError(f"cannot encode a probe text with the tokenizer: {error}") from error
    encoded = b"".join(token_bytes[i] for i in ids if 0 <= i < len(token_bytes))
    return encoded.startswith(b" ")


# ----------------------------------------------------------- tokenizers backend


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


def _piece_decoding_for(tokenizer: tokenizers.Tokenizer) -> _PieceDecoding:
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
    return _PieceDecoding(
        kind=kind,
        replacements=tuple(replacements),
        byte_fallback=byte_fallback,
        byte_level_translation=_GPT2_TRANSLATION if byte_level else None,
    )


def _piece_decoding_without_decoder(tokenizer: tokenizers.Tokenizer) -> _PieceDecoding:
    """Without a decoder, `tokenizers` joins tokens with spaces; infer the model's intent."""
    pre_steps = _flatten_steps(_component_state(tokenizer.pre_tokenizer), "pretokenizers")
    normalizer_steps = _flatten_steps(_component_state(tokenizer.normalizer), "normalizers")
    if any(step.get("type") == "ByteLevel" for step in pre_steps):
        return _PieceDecoding(kind=KIND_BYTE_LEVEL, byte_level_translation=_GPT2_TRANSLATION)
    escapes_spaces = any(step.get("type") == "Metaspace" for step in pre_steps) or any(
        step.get("type") == "Replace" and step.get("content") == SENTENCEPIECE_SPACE
        for step in normalizer_steps
    )
    if escapes_spaces:
        return _PieceDecoding(
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


def _tokenizers_entries(tokenizer: Any) -> tuple[list[bytes | None], set[int], str]:
    """Per-id bytes, special ids and kind of a ``tokenizers.Tokenizer``."""
    if not hasattr(tokenizer, "get_vocab") or not hasattr(tokenizer, "get_added_tokens_decoder"):
        raise VocabularyError(f"expected a tokenizers.Tokenizer, got {_type_name(tokenizer)}")
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


def _conventional_eos_ids(tokenizer: tokenizers.Tokenizer) -> list[int]:
    """Added special tokens named like an end of sequence or of a chat turn."""
    added = tokenizer.get_added_tokens_decoder()
    return sorted(
        token_id
        for token_id, token in added.items()
        if token.special and token.content in _CONVENTIONAL_EOS_NAMES
    )


def _unknown_token_id(model: Any, model_type: str, model_vocab: Mapping[str, int]) -> int | None:
    if model_type == "Unigram":
        # The Unigram model exposes no unk accessor; its serialized form has it.
        return _component_state(model).get("unk_id")
    unk_token = getattr(model, "unk_token", None)
    if unk_token is None:
        return None
    return model_vocab.get(unk_token)


# ----------------------------------------------------------------- other kinds


def _sentencepiece_entries(model: Any) -> tuple[list[bytes | None], set[int]]:
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
            entries.append(_BYTE_FALLBACK_PIECES.get(piece) or _parse_byte_piece(piece, token_id))
        else:
            entries.append(piece.replace(SENTENCEPIECE_SPACE, " ").encode("utf-8"))
    return entries, special_ids


_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _parse_byte_piece(piece: str, token_id: int) -> bytes:
    match = _BYTE_PIECE.fullmatch(piece)
    if match is None:
        raise VocabularyError(f"byte piece {piece!r} (token id {token_id}) is not of the form <0xNN>")
    return bytes([int(match.group(1), 16)])


def _byte_level_entries(
    encoder: Mapping[str, int], byte_decoder: Mapping[str, int]
) -> tuple[list[bytes | None], set[int]]:
    """Per-id bytes of a slow byte-level BPE tokenizer (its own alphabet, from ``byte_decoder``)."""
    num_entries = max(encoder.values(), default=-1) + 1
    pieces: list[str | None] = [None] * num_entries
    for piece, token_id in encoder.items():
        pieces[token_id] = piece
    translation = (
        _GPT2_TRANSLATION
        if dict(byte_decoder) == _GPT2_BYTE_DECODER
        else _byte_level_translation(byte_decoder)
    )
    decoding = _PieceDecoding(kind=KIND_BYTE_LEVEL, byte_level_translation=translation)
    return decoding.to_bytes(pieces), set()


def _byt5_entries(offset: int) -> tuple[list[bytes | None], set[int]]:
    """ByT5: ``offset`` special ids, then one id per byte value."""
    entries: list[bytes | None] = [b""] * offset
    entries.extend(bytes([value]) for value in range(256))
    return entries, set(range(offset))
