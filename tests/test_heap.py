"""gramalign.heap: freed heap is handed back to the operating system after large compiles."""

from __future__ import annotations

import numpy as np
import pytest

import gramalign as ga
from gramalign import heap
from gramalign.masking import compiler


def resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.skipif(heap._trim is None, reason="malloc_trim is glibc's; elsewhere release_freed_memory is a no-op")
def test_release_returns_freed_heap_to_the_system():
    # Freeing a 16 MiB mapped array raises glibc's mmap threshold, so the 4 MiB arrays after it
    # come from the heap; small arrays allocated between them stay, so the freed ones are not
    # at the top of the heap and glibc keeps them, as it keeps large compiles' scratch.
    del_me = np.ones(16 << 17)  # 16 MiB of float64, mapped
    del del_me
    chunks, pins = [], []
    for _ in range(48):
        chunks.append(np.ones(1 << 19))  # 4 MiB
        pins.append(np.ones(1 << 14))  # 128 KiB
    del chunks
    kept = resident_mib()
    assert heap.release_freed_memory()
    assert kept - resident_mib() > 100
    assert len(pins) == 48


def test_large_and_failed_compiles_release_memory(monkeypatch):
    calls = []
    for module in (compiler, heap):  # compile() after a large build; released_on_failure after a failure
        monkeypatch.setattr(module, "release_freed_memory", lambda: calls.append(1) or True)
    vocab = ga.Vocabulary.from_token_bytes([b"{", b"}", b'"', b"a", b"</s>"], eos_token_ids=[4])
    grammar = ga.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    monkeypatch.setattr(compiler, "TRIM_AFTER_BYTES", 1 << 40)
    ga.compile(grammar, vocab, cache=False)
    assert calls == []  # small: nothing to hand back
    monkeypatch.setattr(compiler, "TRIM_AFTER_BYTES", 1)
    ga.compile(grammar, vocab, cache=False)
    ga.compile(ga.Grammar.from_json_schema({"type": "object", "properties": {"b": {"type": "null"}}}), vocab)
    assert len(calls) == 2
    with pytest.raises(ga.GramalignError):
        ga.compile(ga.Grammar.from_regex(r"[^\s\S]"), vocab)  # refused: the scratch goes back too
    assert len(calls) == 3


def test_a_refused_schema_releases_memory(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "release_freed_memory", lambda: calls.append(1) or True)
    with pytest.raises(ga.SchemaCompileError):
        # (a pattern whose lengths have gaps: its bound is built into the automaton, too large)
        ga.Grammar.from_json_schema({"type": "string", "maxLength": 131072, "pattern": "^([a-f][0-9])+$"}).whole()
    assert calls == [1]
    ga.Grammar.from_json_schema({"type": "string", "maxLength": 10}).whole()
    assert calls == [1]  # a schema that compiles asks nothing
