"""Tokens: the exact bytes of every token id, and those bytes as a trie. Knows no grammar.

Imports only :mod:`gramalign.errors`, numpy, numba and the standard library; a tokenizer
library is imported inside the function that reads it. The map, in the order a call
reaches it:

- ``vocabulary.py``: :class:`Vocabulary`, the immutable container (bytes per id, special
  and EOS ids, logits width, fingerprint) and its ``from_*`` class methods; ``from_any``
  dispatches on the tokenizer's type, each ``from_<library>`` hands over to the module of
  that library, imported on first use. Also ``bitmask_width``, the words of one bitmask row.
- ``from_hf.py``: ``transformers`` tokenizers, fast or slow, and the EOS and logits width of
  their model; it reaches the modules below.
- ``from_tokenizers.py``: a ``tokenizers.Tokenizer``, read from its serialized decoder,
  pre-tokenizer and normalizer.
- ``from_sentencepiece.py``: a SentencePiece model or processor.
- ``from_tiktoken.py``: a ``tiktoken.Encoding``.
- ``from_mistral.py``: ``mistral_common`` tokenizers (Tekken and SentencePiece).
- ``byte_conventions.py``: how token strings spell bytes and how to undo it per token: the
  GPT-2 byte alphabet, SentencePiece's ``▁``, byte-fallback ``<0xNN>`` pieces, ByT5.
- ``eos.py``: which ids end a sequence: conventional EOS names, the EOS id checks, the
  warning for an EOS named like a start marker.
- back in ``vocabulary.py``, ``assemble_vocabulary`` turns per-id entries into a checked Vocabulary.

What a reader (``from_<library>.py``) must do: decode each id to its exact bytes, ``None``
for an id it does not assign (the ``*_entries`` helpers return that list, with the ids that
are special), pick the default EOS ids with ``eos.py``'s helpers (``conventional_eos_ids``,
``valid_ids``), and return ``assemble_vocabulary(kind=..., entries=..., special_ids=...,
vocab_size=..., eos_token_ids=..., default_eos_ids=..., add_prefix_space=..., source=...)``,
naming the tokenizer in errors with ``type_name_of``. These helpers are public names of
their modules (not of the package: ``__all__`` keeps the user API to the two classes).
- ``trie.py``: :class:`TokenTrie`, the grammar tokens of a vocabulary as pre-order numpy
  arrays that numba kernels walk (built by :mod:`gramalign.masking.compiler`).
"""

from .trie import TokenTrie
from .vocabulary import Vocabulary

__all__ = ["TokenTrie", "Vocabulary"]
