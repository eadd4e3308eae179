"""The row tracker follows vLLM's own batch updates exactly as vLLM's own bookkeeping does.

vLLM's ``BatchUpdateBuilder`` makes the updates (removals, adds that take the lowest free row,
one-way moves that condense, swaps) and vLLM's ``process_dict_updates``, which its built-in
processors use, is the oracle for which request sits on which row.
"""

from __future__ import annotations

import random

from vllm.v1.sample.logits_processor import BatchUpdateBuilder, MoveDirectionality
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

import gramalign as ga
from gramalign.integrations.batch_rows import ConstrainedRows


def test_rows_match_vllms_own_bookkeeping():
    vocab = ga.Vocabulary.from_token_bytes([b"a", b"b", b""], eos_token_ids=[2], special_token_ids=[2])
    compiled = ga.compile(ga.Grammar.from_regex("[ab]*"), vocab)
    rng = random.Random(3)
    builder = BatchUpdateBuilder()
    rows = ConstrainedRows()
    oracle: dict[int, list] = {}  # row -> the request's token list, for constrained requests
    batch: list = []  # row -> (constrained, token list)
    for step in range(2000):
        for index in sorted(rng.sample(range(len(batch)), k=min(len(batch), rng.randrange(3))), reverse=True):
            builder.removed_append(index)
            batch[index] = None
        for _ in range(rng.randrange(4)):
            request = (rng.random() < 0.6, [])
            index = builder.pop_removed()
            if index is None:
                index = len(batch)
                batch.append(request)
            else:
                batch[index] = request
            params = type("Params", (), {"constrained": request[0]})()
            builder.added.append((index, params, None, request[1]))
        # condense as InputBatch.condense does: the last rows move down into the lowest holes
        while builder.peek_removed() is not None:
            last = max((i for i, r in enumerate(batch) if r is not None), default=-1)
            hole = builder.peek_removed()
            if hole >= last:
                break
            builder.pop_removed()
            batch[hole], batch[last] = batch[last], None
            builder.moved.append((last, hole, MoveDirectionality.UNIDIRECTIONAL))
        while batch and batch[-1] is None:
            batch.pop()
        assert None not in batch
        if len(batch) >= 2 and rng.random() < 0.4:
            a, b = rng.sample(range(len(batch)), 2)
            batch[a], batch[b] = batch[b], batch[a]
            builder.moved.append((a, b, MoveDirectionality.SWAP))
        update = builder.get_and_reset(len(batch))
        process_dict_updates(oracle, update, lambda params, _prompt, output: output if params.constrained else None)
        rows.update(update, lambda params: (compiled if params.constrained else None, ""))
        assert {i: id(t) for i, t in oracle.items()} == {i: id(r.tokens) for i, r in rows.rows.items()}
        assert oracle == {i: t for i, (c, t) in enumerate(batch) if c}
        for request in batch:
            request[1].append(rng.randrange(2))
