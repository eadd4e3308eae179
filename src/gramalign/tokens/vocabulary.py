"""The exact bytes behind every token id of a tokenizer.

Grammar masks are computed over bytes, so each token id must be mapped to the byte string
it contributes to the decoded output. Tokenizers hide those bytes behind different
conventions (GPT-2's printable byte alphabet, SentencePiece's ``▁`` and ``<0xNN>`` pieces,
tiktoken's raw ranks, ...); :class:`Vocabulary` undoes them once, up front.

Special, added, control and unknown tokens get ``b""`` and are listed in
``special_token_ids``: a grammar never allows them. End-of-sequence ids are kept apart in
``eos_token_ids`` because a grammar allows them exactly where it accepts.

The ``from_*`` constructors are thin: each hands the tokenizer to the module of its library
(``from_hf``, ``from_tokenizers``, ``from_tiktoken``, ``from_sentencepiece``,
``from_mistral``), imported on first use, which reads the token strings, undoes their byte
convention (``byte_conventions``) and finds the EOS ids (``eos``); :func:`assemble_vocabulary` here
turns the result into a validated :class:`Vocabulary`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from gramalign.errors import VocabularyError

from .byte_conventions import KIND_RAW
from .eos import check_eos_ids
from .trie import TokenTrie

if TYPE_CHECKING:  # pragma: no cover - imports for annotations only
    import sentencepiece
    import tiktoken
    import tokenizers

def bitmask_width(vocab_size: int) -> int:
    """Number of int32 words that hold one row of ``vocab_size`` bits.

    The row layout is :mod:`gramalign.masking.bitmask`'s, which imports this; it is defined
    here so that :attr:`Vocabulary.eos_bitmask` needs nothing from masking."""
    if vocab_size <= 0:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    return (vocab_size + 31) // 32


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
        check_eos_ids(self.eos_token_ids, self.size)

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
    def token_trie(self) -> TokenTrie:
        """The trie of :meth:`grammar_token_ids`' bytes, which every mask walks. Shared;
        a vocabulary read from a tokenizer builds it at once (~90 ms for 128k tokens)."""
        return TokenTrie.from_tokens(self.token_bytes, self._grammar_token_ids)

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
        words = bitmask_width(self.size)
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
        return assemble_vocabulary(
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
        from .from_tokenizers import vocabulary_from_tokenizers

        return vocabulary_from_tokenizers(tokenizer, vocab_size=vocab_size, eos_token_ids=eos_token_ids)

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
        it (and without ``eos_token_ids``) the EOS is ``tokenizer.eos_token_id``, unless that
        token looks like a start marker (``<|im_start|>``, ``<s>``, ``<|begin_of_text|>``), as
        in SmolLM2's GGUF tokenizer: then it is the special token the tokenizer's chat template
        closes an assistant turn with (``<|im_end|>``), and a warning where there is none
        (generation would never end where the grammar allows). ``vocab_size`` overrides the
        width.
        """
        from .from_hf import vocabulary_from_hf

        return vocabulary_from_hf(tokenizer, vocab_size=vocab_size, eos_token_ids=eos_token_ids, model=model)

    @classmethod
    def from_gguf(
        cls,
        path: str | os.PathLike[str],
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a llama.cpp GGUF model file's header, without its weights (milliseconds).

        Byte-level BPE vocabularies (``tokenizer.ggml.model`` ``"gpt2"``) only. The size
        defaults to the rows of the output tensor (the model's logits width) and the EOS
        ids to the file's end-of-text and end-of-turn ids.
        """
        from .from_gguf import vocabulary_from_gguf

        return vocabulary_from_gguf(path, vocab_size=vocab_size, eos_token_ids=eos_token_ids)

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
        from .from_tiktoken import vocabulary_from_tiktoken

        return vocabulary_from_tiktoken(encoding, vocab_size=vocab_size, eos_token_ids=eos_token_ids)

    @classmethod
    def from_sentencepiece(
        cls,
        model: str | os.PathLike[str] | sentencepiece.SentencePieceProcessor,
        *,
        vocab_size: int | None = None,
        eos_token_ids: int | Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a SentencePiece model file or a loaded ``SentencePieceProcessor``."""
        from .from_sentencepiece import vocabulary_from_sentencepiece

        return vocabulary_from_sentencepiece(model, vocab_size=vocab_size, eos_token_ids=eos_token_ids)

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
        from .from_mistral import vocabulary_from_mistral

        return vocabulary_from_mistral(tokenizer, vocab_size=vocab_size, eos_token_ids=eos_token_ids)

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
        raise VocabularyError(f"unsupported tokenizer type {type_name_of(tokenizer)}")


# ---------------------------------------------------------------------- helpers


def type_name_of(obj: object) -> str:
    """``module.QualifiedName`` of ``obj``'s type, for error messages about tokenizers."""
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def assemble_vocabulary(
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
    check_eos_ids(eos, size)

    if callable(add_prefix_space):
        add_prefix_space = _prepends_space(add_prefix_space, token_bytes)

    vocabulary = Vocabulary(
        token_bytes=tuple(token_bytes),
        size=size,
        special_token_ids=frozenset(special),
        eos_token_ids=tuple(eos),
        kind=kind,
        add_prefix_space=add_prefix_space,
    )
    vocabulary.token_trie  # (built with the vocabulary, not in its first compile: every compile needs it)
    return vocabulary


# Text whose encoding reveals whether a tokenizer prepends a space ("dummy prefix").
_PREFIX_SPACE_PROBE = "a"


def _prepends_space(encode: Callable[[str], list[int]], token_bytes: Sequence[bytes]) -> bool:
    """Whether encoding text that starts without a space yields bytes that start with one."""
    try:
        ids = encode(_PREFIX_SPACE_PROBE)
    except Exception as error:  # any failure of a foreign encode() is a setup problem
        raise VocabularyError(f"cannot encode a probe text with the tokenizer: {error}") from error
    encoded = b"".join(token_bytes[i] for i in ids if 0 <= i < len(token_bytes))
    return encoded.startswith(b" ")
