"""The header of a GGUF model file: its metadata and tensor shapes, without the tensors.

A GGUF file starts with key-value metadata (the tokenizer's tokens, types and special ids,
the chat template, ...) and the name and shape of every tensor, before the weights. Reading
only that part is what a vocabulary needs: milliseconds where loading the model takes
tens of seconds. Layout: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO

from gramalign.errors import VocabularyError

# Value types of GGUF metadata: struct format of the scalar ones.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GGUFHeader:
    """``metadata``: key -> value (arrays as lists); ``tensor_shapes``: name -> dimensions,
    innermost first, as GGUF writes them (``token_embd.weight`` is ``[hidden, vocabulary]``)."""

    metadata: dict[str, Any]
    tensor_shapes: dict[str, tuple[int, ...]]


def read_gguf_header(path: str | os.PathLike[str]) -> GGUFHeader:
    """The metadata and tensor shapes of the GGUF file at ``path`` (versions 2 and 3)."""
    try:
        with open(path, "rb") as stream:
            return _read(stream, str(path))
    except (struct.error, UnicodeDecodeError, MemoryError, OverflowError) as error:
        raise VocabularyError(f"{str(path)!r} is not a readable GGUF file: {type(error).__name__}: {error}") from None


def _read(stream: BinaryIO, name: str) -> GGUFHeader:
    if stream.read(4) != b"GGUF":
        raise VocabularyError(f"{name!r} is not a GGUF file (it does not start with 'GGUF')")
    version, tensor_count, kv_count = struct.unpack("<IQQ", stream.read(20))
    if version not in (2, 3):
        raise VocabularyError(f"{name!r} is GGUF version {version}; versions 2 and 3 are read")
    metadata = {}
    for _ in range(kv_count):
        key = _string(stream)
        (kind,) = struct.unpack("<I", stream.read(4))
        metadata[key] = _value(stream, kind)
    shapes = {}
    for _ in range(tensor_count):
        tensor = _string(stream)
        (dims,) = struct.unpack("<I", stream.read(4))
        shapes[tensor] = struct.unpack(f"<{dims}Q", stream.read(8 * dims))
        stream.read(12)  # the tensor's type and the offset of its data
    return GGUFHeader(metadata, shapes)


def _string(stream: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", stream.read(8))
    data = stream.read(length)
    if len(data) != length:
        raise struct.error("the file ends inside a string")
    return data.decode("utf-8")


def _value(stream: BinaryIO, kind: int) -> Any:
    if kind == _STRING:
        return _string(stream)
    if kind == _ARRAY:
        element, count = struct.unpack("<IQ", stream.read(12))
        if element == _STRING:
            return [_string(stream) for _ in range(count)]
        if element in _SCALARS:  # one read for the whole array
            fmt = _SCALARS[element]
            size = struct.calcsize(fmt)
            return list(struct.unpack(f"<{count}{fmt[1]}", stream.read(size * count)))
        return [_value(stream, element) for _ in range(count)]
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, stream.read(struct.calcsize(fmt)))[0]
    raise struct.error(f"unknown metadata value type {kind}")
