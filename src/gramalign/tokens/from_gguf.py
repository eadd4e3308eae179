"""The vocabulary of a GGUF model file, read from its header without the weights.

llama.cpp's GGUF files carry their tokenizer as metadata: every token's text and type, the
special ids and the chat template. Byte-level BPE vocabularies (``tokenizer.ggml.model``
``"gpt2"``, as SmolLM2's, Qwen's and Llama 3's) are read here; the logits width is the
rows of the output (or tied embedding) tensor, and the EOS ids are the file's end of text
and end of turn, which llama.cpp stops at.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from gramalign.errors import VocabularyError

from .byte_conventions import GPT2_BYTE_DECODER, KIND_BYTE_LEVEL, byte_level_entries
from .eos import valid_ids
from .gguf import read_gguf_header
from .vocabulary import Vocabulary, assemble_vocabulary

# llama.cpp's token types: text, then unknown, control, user-defined (text matched as
# written), unused and byte-fallback tokens.
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6


def vocabulary_from_gguf(
    path: str | os.PathLike[str],
    *,
    vocab_size: int | None = None,
    eos_token_ids: int | Iterable[int] | None = None,
) -> Vocabulary:
    """:meth:`Vocabulary.from_gguf`, documented there."""
    header = read_gguf_header(path)
    metadata, shapes = header.metadata, header.tensor_shapes
    model = metadata.get("tokenizer.ggml.model")
    if model != "gpt2":
        raise VocabularyError(f"the GGUF file {str(path)!r} has a {model!r} tokenizer: only byte-level BPE ('gpt2') "
                              "vocabularies are read from GGUF files; load its tokenizer with transformers "
                              "(AutoTokenizer.from_pretrained(folder, gguf_file=...)) and use Vocabulary.from_hf")
    tokens = metadata.get("tokenizer.ggml.tokens")
    types = metadata.get("tokenizer.ggml.token_type") or [_NORMAL] * len(tokens or ())
    if not isinstance(tokens, list) or len(types) != len(tokens):
        raise VocabularyError(f"the GGUF file {str(path)!r} has no token list (tokenizer.ggml.tokens) of its types")
    # Only text tokens are spelled in GPT-2's byte alphabet; control tokens need no bytes.
    entries, _ = byte_level_entries({token: k for k, token in enumerate(tokens) if types[k] == _NORMAL},
                                     GPT2_BYTE_DECODER)
    entries += [None] * (len(tokens) - len(entries))
    special = set()
    for k, kind in enumerate(types):
        if kind == _USER_DEFINED:  # written as the text it stands for, not in the byte alphabet
            entries[k] = tokens[k].encode("utf-8")
        elif kind != _NORMAL:
            special.add(k)
    if vocab_size is None:
        vocab_size = _logits_width(metadata, shapes)
    default_eos = valid_ids([metadata.get("tokenizer.ggml.eos_token_id"), metadata.get("tokenizer.ggml.eot_token_id")])
    return assemble_vocabulary(
        kind=KIND_BYTE_LEVEL,
        entries=entries,
        special_ids=special,
        vocab_size=vocab_size,
        eos_token_ids=eos_token_ids,
        default_eos_ids=default_eos,
        add_prefix_space=bool(metadata.get("tokenizer.ggml.add_space_prefix", False)),
        source=f"GGUF file {os.fspath(path)!r}",
    )


def _logits_width(metadata: dict, shapes: dict) -> int | None:
    """Rows of the output matrix (the embedding's where they are tied), else the declared size."""
    for name in ("output.weight", "token_embd.weight"):
        if name in shapes and len(shapes[name]) == 2:
            return int(shapes[name][1])
    declared = metadata.get(f"{metadata.get('general.architecture')}.vocab_size")
    return int(declared) if isinstance(declared, int) else None
