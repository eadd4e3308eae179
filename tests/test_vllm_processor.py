"""The vLLM logits processor's bookkeeping, without vLLM: request constraints, rows added,
removed, moved and swapped in a persistent batch, tokens fed from growing lists, and the
adapter class itself driven through a stand-in of vLLM's interface module.

The real engine is exercised by tests/vllm_engine/ in vLLM's own virtual environment
(``make test-vllm``, which ``make test`` runs).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import types
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum, auto
from types import SimpleNamespace

import jsonschema
import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.integrations.batch_rows import ConstrainedRows, ConstraintError, parse_request_constraint
from gramalign.masking.bitmask import unpack_bitmask_row
from gramalign.parsing import IncrementalParser

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99},
                                           "ok": {"type": "boolean"}}, "required": ["n", "ok"]}
REGEX = r"(ab|c)+d"
LARK = 'start: "x" ("+" "x")* ";"'


def small_vocabulary() -> ga.Vocabulary:
    pieces = [bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b"true", b"false", b"ab", b"cd", b"+x", b"x;"]
    return ga.Vocabulary.from_token_bytes(pieces + [b""], eos_token_ids=[len(pieces)],
                                          special_token_ids=[len(pieces)])


class Direction(Enum):  # stands in for vllm's MoveDirectionality: only .name is read
    UNIDIRECTIONAL = auto()
    SWAP = auto()


@dataclass(frozen=True)
class FakeBatchUpdate:
    batch_size: int
    removed: list
    added: list
    moved: list


def params(spec=None, eos=None, stops=()):
    return SimpleNamespace(extra_args=None if spec is None else {"gramalign": spec}, eos_token_id=eos,
                           stop_token_ids=list(stops))


# -- request constraints --------------------------------------------------------------------

def test_constraint_forms_and_canonical_schemas():
    spaced = json.dumps(SCHEMA, indent=2)
    a = parse_request_constraint({"gramalign": {"json_schema": SCHEMA}})
    b = parse_request_constraint({"gramalign": json.dumps({"json_schema": spaced})})  # the server's JSON text
    assert a == b and hash(a) == hash(b)
    assert a.grammar() is b.grammar()  # built once
    c = parse_request_constraint({"gramalign": {"json_schema": SCHEMA, "property_order": "any"}})
    assert c != a and c.options == (("property_order", "any"),)
    assert parse_request_constraint(None) is None
    assert parse_request_constraint({"other": 1}) is None
    regex = parse_request_constraint({"gramalign": {"regex": "[A-Z]+", "flags": ["IGNORECASE"]}})
    assert regex.grammar().single_terminal().dfa.matches(b"abC")
    assert parse_request_constraint({"gramalign": {"builtin": "json"}}).grammar() == ga.Grammar.builtin("json")
    # objects are closed unless the request says strict=false (JSON Schema's meaning)
    extra = b'{"n":1,"ok":true,"x":2}'
    assert not IncrementalParser(build_parser_tables(a.grammar())).accepts(extra)
    lax = parse_request_constraint({"gramalign": {"json_schema": SCHEMA, "strict": False}})
    assert IncrementalParser(build_parser_tables(lax.grammar())).accepts(extra)


@pytest.mark.parametrize("spec, message", [
    ({}, "exactly one of json_schema, regex, lark, builtin"),
    ({"regex": "a", "lark": LARK}, "got regex and lark"),
    ({"regex": "a", "property_order": "any"}, "unknown option(s) ['property_order'] for a regex constraint"),
    ({"json_schema": "{not json"}, "the json_schema is not valid JSON"),
    ({"json_schema": [1]}, "json_schema must be an object or a boolean"),
    ({"regex": 5}, "regex must be a string"),
    ("[1,", "is text but not JSON"),
    (7, "must be an object (or its JSON text)"),
    ({"regex": "a", "flags": ["NOPE"]}, "unknown regex flag 'NOPE'"),
])
def test_malformed_constraints_are_refused(spec, message):
    with pytest.raises(ConstraintError) as info:
        constraint = parse_request_constraint({"gramalign": spec})
        constraint.grammar()
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)  # what vLLM turns into HTTP 400


@pytest.mark.parametrize("spec, message", [
    ({"regex": "(a"}, "RegexError: missing ), unterminated subpattern"),
    ({"regex": r"(a)\1"}, "RegexError"),
    ({"regex": "[^\\x00-\\U0010FFFF]"}, "matches no string at all"),
    ({"lark": "start: undefined_rule"}, "GrammarError"),
    ({"json_schema": {"type": "object", "minProperties": "x"}}, "SchemaCompileError"),
    ({"json_schema": {"type": "string"}, "whitespace": "loose"}, "whitespace must be one of"),
    ({"builtin": "cobol"}, "cobol"),
])
def test_grammars_that_do_not_compile_carry_gramalign_message(spec, message):
    constraint = parse_request_constraint({"gramalign": spec})
    with pytest.raises(ConstraintError) as info:
        constraint.grammar()
    assert message in str(info.value)
    assert f"the request's {constraint.kind}" in str(info.value)


# -- rows of a persistent batch ---------------------------------------------------------------

class Request:
    """A request as the engine holds it: its token list (appended in place) and, as the oracle,
    a matcher fed directly, never through the rows."""

    def __init__(self, compiled: "ga.CompiledGrammar | None", spec):
        self.compiled = compiled
        self.spec = spec
        self.tokens: list[int] = []
        self.oracle = compiled.matcher() if compiled is not None else None


def test_rows_follow_adds_removes_moves_and_swaps_against_per_request_oracles():
    vocab = small_vocabulary()
    specs = [{"json_schema": SCHEMA}, {"regex": REGEX}, {"lark": LARK}, None]
    compiled = {}
    for spec in specs:
        if spec is not None:
            constraint = parse_request_constraint({"gramalign": spec})
            compiled[constraint] = ga.compile(constraint.grammar(), vocab)

    def constrain(p):
        constraint = parse_request_constraint(p.extra_args)
        return (None, "") if constraint is None else (compiled[constraint], constraint.kind)

    rng = np.random.default_rng(7)
    rows = ConstrainedRows()
    batch: list[Request] = []  # the engine's persistent batch, index = row
    finished: list[Request] = []
    words = ga.bitmask_width(vocab.size)
    checked_rows = 0
    for step in range(300):
        # The engine's bookkeeping, as vLLM's InputBatch does it: finished (or aborted, or
        # preempted) requests leave holes; new ones take the lowest holes first, then the end;
        # the last rows move down into the holes left (one-way moves); and sometimes two rows
        # swap. A hole that an add or a move fills is no longer listed as removed.
        holes = []
        for index, request in enumerate(batch):
            done = request.oracle is not None and request.oracle.is_terminated()
            if done or rng.random() < 0.03:
                finished.append(request)
                holes.append(index)
        slots: list = [None if i in holes else r for i, r in enumerate(batch)]
        added, moved = [], []
        while len(slots) - len(holes) < 6 and rng.random() < 0.7:
            if finished and rng.random() < 0.2 and finished[-1].oracle is not None \
                    and not finished[-1].oracle.is_terminated():
                request = finished.pop()  # resumed after preemption: same list, tokens kept
            else:
                spec = specs[int(rng.integers(len(specs)))]
                key = parse_request_constraint({"gramalign": spec}) if spec is not None else None
                request = Request(compiled.get(key), spec)
            if holes:
                index = holes.pop(0)
                slots[index] = request
            else:
                index = len(slots)
                slots.append(request)
            added.append((index, params(request.spec), None, request.tokens))
        while holes:
            last = max(i for i, r in enumerate(slots) if r is not None) if any(slots) else -1
            if holes[0] >= last:
                break
            hole = holes.pop(0)
            slots[hole], slots[last] = slots[last], None
            moved.append((last, hole, Direction.UNIDIRECTIONAL))
        removed = sorted(holes, reverse=True)
        batch = [r for r in slots if r is not None]
        assert slots[:len(batch)] == batch
        if len(batch) >= 2 and rng.random() < 0.3:
            a, b = (int(i) for i in rng.choice(len(batch), 2, replace=False))
            batch[a], batch[b] = batch[b], batch[a]
            moved.append((a, b, Direction.SWAP))
        if removed or added or moved:
            rows.update(FakeBatchUpdate(len(batch), removed, added, moved), constrain)
        # Masks: every constrained row equals its request's own oracle, nothing else is touched.
        bitmask = np.full((8, words), -1, dtype=np.int32)
        indices = rows.fill(bitmask)
        assert indices == [i for i, r in enumerate(batch) if r.compiled is not None]
        for index, request in enumerate(batch):
            if request.compiled is None:
                assert (bitmask[index] == -1).all()
                continue
            expected = np.zeros((1, words), dtype=np.int32)
            request.oracle.fill_next_token_bitmask(expected, 0)
            np.testing.assert_array_equal(bitmask[index], expected[0])
            checked_rows += 1
        # Sampling: each request appends one allowed token to its own list (in place).
        for index, request in enumerate(batch):
            if request.compiled is None:
                request.tokens.append(int(rng.integers(vocab.size)))
                continue
            allowed = np.flatnonzero(unpack_bitmask_row(bitmask[index], vocab.size))
            eos = [t for t in allowed if t in vocab.eos_token_ids]
            token = int(eos[0]) if eos and len(request.tokens) > 12 else int(rng.choice(allowed))
            request.tokens.append(token)
            request.oracle.accept_token(token)
    assert checked_rows > 500
    # Every finished constrained text is valid by the independent oracles.
    done = [r for r in finished + batch if r.oracle is not None and r.oracle.is_terminated()]
    assert len(done) > 20
    parser = lark.Lark(LARK, parser="lalr")
    for request in done:
        text = vocab.decode_bytes(request.tokens[:-1]).decode()
        if "json_schema" in request.spec:
            jsonschema.validate(json.loads(text), SCHEMA)
        elif "regex" in request.spec:
            assert re.fullmatch(REGEX, text)
        else:
            parser.parse(text)


def test_rows_feed_only_new_tokens_stop_at_placeholders_and_roll_back_dropped_ones():
    vocab = small_vocabulary()
    compiled = ga.compile(ga.Grammar.from_regex(REGEX), vocab)
    ab, c, d = (vocab.token_bytes.index(t) for t in (b"ab", b"c", b"d"))
    rows = ConstrainedRows()
    tokens: list[int] = []
    rows.add(0, compiled, tokens)
    bitmask = np.zeros((1, ga.bitmask_width(vocab.size)), dtype=np.int32)

    def allowed():
        rows.fill(bitmask)
        return set(np.flatnonzero(unpack_bitmask_row(bitmask[0], vocab.size)).tolist())

    assert d not in allowed()
    tokens += [ab, c, -1]  # the last token is still being sampled (asynchronous scheduling)
    assert d in allowed() and rows.rows[0].fed == 2
    tokens[-1] = c
    assert d in allowed() and rows.rows[0].fed == 3 and rows.rows[0].matcher.num_accepted_tokens == 3
    del tokens[1:]  # the engine dropped two tokens: the matcher follows it back
    allowed()
    assert rows.rows[0].matcher.num_accepted_tokens == 1 and rows.rows[0].fed == 1
    tokens += [d, vocab.eos_token_ids[0], vocab.eos_token_ids[0]]  # EOS, then EOS again (ignore_eos)
    assert allowed() == set(vocab.eos_token_ids)


def test_a_forbidden_token_stops_only_its_row(caplog):
    vocab = small_vocabulary()
    compiled = ga.compile(ga.Grammar.from_regex(REGEX), vocab)
    rows = ConstrainedRows()
    bad, good = [vocab.token_bytes.index(b"z")], []
    rows.add(0, compiled, bad, "bad one")
    rows.add(1, compiled, good)
    bitmask = np.zeros((2, ga.bitmask_width(vocab.size)), dtype=np.int32)
    assert rows.fill(bitmask) == [0, 1]
    assert "request bad one produced token" in caplog.text
    assert np.flatnonzero(unpack_bitmask_row(bitmask[0], vocab.size)).tolist() == list(vocab.eos_token_ids)
    expected = np.zeros((1, bitmask.shape[1]), dtype=np.int32)
    compiled.matcher().fill_next_token_bitmask(expected, 0)
    np.testing.assert_array_equal(bitmask[1], expected[0])


def test_a_part_that_fails_to_build_where_the_matcher_goes_stops_only_its_row(caplog):
    vocab = small_vocabulary()
    inner = {"type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}}}
    schema = {"type": "object", "properties": {"a": inner, "n": {"type": "integer"}}}
    grammar = ga.Grammar.from_json_schema(schema)  # the root builds; the pattern is reached later
    compiled = ga.compile(grammar, vocab, eager=False)
    with pytest.raises(ga.SchemaCompileError):
        grammar.whole()
    rows = ConstrainedRows()
    reaching = [vocab.token_bytes.index(piece) for piece in (b'{"', b"a", b'"', b":", b'{"')]
    rows.add(0, compiled, reaching, "reaches the pattern")
    rows.add(1, compiled, [], "stays clear")
    bitmask = np.zeros((2, ga.bitmask_width(vocab.size)), dtype=np.int32)
    assert rows.fill(bitmask) == [0, 1]
    assert "request reaches the pattern reached a part of its grammar that cannot be compiled" in caplog.text
    assert "unterminated group" in caplog.text
    assert np.flatnonzero(unpack_bitmask_row(bitmask[0], vocab.size)).tolist() == list(vocab.eos_token_ids)
    allowed = set(np.flatnonzero(unpack_bitmask_row(bitmask[1], vocab.size)).tolist())
    assert allowed == {vocab.token_bytes.index(b"{"), vocab.token_bytes.index(b'{"')}
    assert "stays clear" not in caplog.text
    reaching.append(vocab.token_bytes.index(b'"'))  # the engine samples on: the row only ends
    assert rows.fill(bitmask) == [0, 1]
    assert np.flatnonzero(unpack_bitmask_row(bitmask[0], vocab.size)).tolist() == list(vocab.eos_token_ids)


# -- the adapter class, with a stand-in for vLLM's interface module -------------------------------

def _fake_vllm(monkeypatch, tokenizer):
    class LogitsProcessor(ABC):  # the methods vLLM's abstract class declares
        @classmethod
        def validate_params(cls, sampling_params):
            return None

        @abstractmethod
        def __init__(self, vllm_config, device, is_pin_memory): ...

        @abstractmethod
        def apply(self, logits): ...

        @abstractmethod
        def is_argmax_invariant(self): ...

        @abstractmethod
        def update_state(self, batch_update): ...

    modules = {name: types.ModuleType(name) for name in
               ("vllm", "vllm.v1", "vllm.v1.sample", "vllm.v1.sample.logits_processor", "vllm.tokenizers")}
    modules["vllm.v1.sample.logits_processor"].LogitsProcessor = LogitsProcessor
    modules["vllm.v1.sample.logits_processor"].BatchUpdate = FakeBatchUpdate
    modules["vllm.tokenizers"].cached_tokenizer_from_config = lambda model_config: tokenizer
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, "gramalign.integrations.vllm", raising=False)
    import gramalign.integrations
    import gramalign.integrations.vllm as adapter

    # Bound to the stand-ins: forget it after the test (setitem/setattr undo by removing).
    monkeypatch.setitem(sys.modules, "gramalign.integrations.vllm", adapter)
    monkeypatch.setattr(gramalign.integrations, "vllm", adapter, raising=False)
    return adapter


def test_processor_masks_constrained_rows_and_leaves_the_others(monkeypatch):
    torch = pytest.importorskip("torch")
    from support.tokenizer_zoo import gpt2_hf_fast

    tokenizer = gpt2_hf_fast()
    adapter = _fake_vllm(monkeypatch, tokenizer)
    width = 50304  # wider than the tokenizer, as models pad their embeddings
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: width),
                             scheduler_config=SimpleNamespace(max_num_seqs=8))
    processor = adapter.GramalignLogitsProcessor(config, "cpu", False)
    assert processor.is_argmax_invariant() is False
    cls = adapter.GramalignLogitsProcessor
    cls.validate_params(params({"regex": "[0-9]+"}))
    cls.validate_params(params(None))
    with pytest.raises(ValueError, match="RegexError"):
        cls.validate_params(params({"regex": "(x"}))
    both = params({"regex": "[0-9]+"})
    both.structured_outputs = SimpleNamespace(json={"type": "integer"})
    with pytest.raises(ValueError, match="cannot ask for both gramalign's constraint"):
        cls.validate_params(both)

    eos = tokenizer.eos_token_id
    vocab = ga.Vocabulary.from_hf(tokenizer, vocab_size=width, eos_token_ids=[eos])
    schema = ga.compile(ga.Grammar.from_json_schema(SCHEMA), vocab)
    digits = ga.compile(ga.Grammar.from_regex("[0-9]{3}"), vocab)
    # The engine's rows: (output list, oracle matcher or None for unconstrained, or "end").
    rows = [([], schema.matcher()), ([], None), ([], digits.matcher()), ([], "end")]
    processor.update_state(FakeBatchUpdate(4, [], [
        (0, params({"json_schema": SCHEMA}, eos=eos), [1, 2], rows[0][0]),
        (1, params(None, eos=eos), [1, 2], rows[1][0]),
        (2, params({"regex": "[0-9]{3}"}, eos=eos), [1, 2], rows[2][0]),
        (3, params({"regex": "(a"}, eos=eos), [1, 2], rows[3][0]),  # slipped past validation: may only end
    ], []))
    generator = torch.Generator().manual_seed(0)
    done = []
    for step in range(24):
        processor.update_state(None)
        logits = torch.randn(len(rows), width, generator=generator)
        before = logits.clone()
        assert processor.apply(logits) is logits
        for row, (output, oracle) in enumerate(rows):
            if oracle is None:
                assert torch.equal(logits[row], before[row])
                continue
            allowed = torch.zeros(width, dtype=torch.bool)
            allowed[[eos] if oracle == "end" else torch.from_numpy(oracle.allowed_token_ids())] = True
            assert torch.equal(torch.isfinite(logits[row]), allowed)
            assert torch.equal(logits[row][allowed], before[row][allowed])
        for row, (output, oracle) in enumerate(rows):
            token = int(logits[row].argmax())
            output.append(token)
            if oracle not in (None, "end") and not oracle.is_terminated():
                oracle.accept_token(token)
        if step == 5:
            # Row 1 finishes; the engine moves row 3 down into it (one-way), then a new digits request
            # takes row 3, and rows 0 and 2 swap.
            processor.update_state(FakeBatchUpdate(4, [], [], [(3, 1, Direction.UNIDIRECTIONAL)]))
            rows[1] = rows[3]
            rows[3] = ([], digits.matcher())
            processor.update_state(FakeBatchUpdate(4, [], [(3, params({"regex": "[0-9]{3}"}, eos=eos), None,
                                                            rows[3][0])], [(0, 2, Direction.SWAP)]))
            rows[0], rows[2] = rows[2], rows[0]
        if step == 9:  # every request leaves but the schema one, which stays alone on row 0
            schema_row = next(r for r in rows if r[1] is not None and r[1] != "end" and r[1].compiled is schema)
            done += [r for r in rows if r is not schema_row]
            index = rows.index(schema_row)
            removed = sorted((i for i in range(4) if i != index and i != 0), reverse=True)
            moved = [(index, 0, Direction.UNIDIRECTIONAL)] if index else []
            processor.update_state(FakeBatchUpdate(1, removed, [], moved))
            rows = [schema_row]
    assert [len(o) for o, _ in done if _ not in (None, "end")] and schema_row[1].is_terminated()
    for output, oracle in done + rows:
        if oracle in (None, "end") or not oracle.is_terminated():
            continue
        text = vocab.decode_bytes(output[:output.index(eos)]).decode()
        if oracle.compiled is schema:
            jsonschema.validate(json.loads(text), SCHEMA)
        else:
            assert re.fullmatch("[0-9]{3}", text)
    assert len(processor._rows) == 1


def test_import_without_vllm_names_the_extra():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "vllm" or name.startswith("vllm."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, Block())
        try:
            import gramalign.integrations.vllm
        except ImportError as error:
            print("ImportError:", error)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "install the 'vllm' extra" in result.stdout and "gramalign[vllm]" in result.stdout


def test_import_gramalign_imports_neither_vllm_nor_torch():
    code = "import sys, gramalign, gramalign.integrations.batch_rows; print(sorted(m for m in sys.modules " \
           "if m.split('.')[0] in ('vllm', 'torch')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_each_request_ends_on_its_own_stop_ids(monkeypatch):
    torch = pytest.importorskip("torch")
    from support.tokenizer_zoo import gpt2_hf_fast

    tokenizer = gpt2_hf_fast()
    adapter = _fake_vllm(monkeypatch, tokenizer)
    width = len(tokenizer)
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: width),
                             scheduler_config=SimpleNamespace(max_num_seqs=4))
    processor = adapter.GramalignLogitsProcessor(config, "cpu", False)
    eos, seven = tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("7")
    plain, stopped = [], []
    processor.update_state(FakeBatchUpdate(2, [], [
        (0, params({"regex": "[0-9]{1,3}"}, eos=eos), None, plain),
        # "7" stops this request in vLLM, so it can only be the end here, never a digit of the text
        (1, params({"regex": "[0-9]{1,3}"}, eos=eos, stops=[seven]), None, stopped),
    ], []))
    logits = torch.zeros(2, width)
    processor.apply(logits)
    assert torch.isfinite(logits[0, seven]) and not torch.isfinite(logits[1, seven])
    assert not torch.isfinite(logits[:, eos]).any()  # nothing written yet: no end allowed
    one = tokenizer.convert_tokens_to_ids("1")
    plain.append(one)
    stopped.append(one)
    logits = torch.zeros(2, width)
    processor.apply(logits)
    assert torch.isfinite(logits[0, eos]) and torch.isfinite(logits[1, eos])  # "1" is complete in both
    plain.append(seven)
    stopped.append(seven)  # ends request 1: its matcher terminates, request 0 reads "17"
    logits = torch.zeros(2, width)
    processor.apply(logits)
    assert torch.isfinite(logits[0, one]) and torch.isfinite(logits[0, eos])
    assert torch.isfinite(logits[1]).nonzero().flatten().tolist() == sorted([eos, seven])


def test_a_second_copy_for_the_same_engine_stands_aside(monkeypatch):
    torch = pytest.importorskip("torch")
    vocab_size = 64
    adapter = _fake_vllm(monkeypatch, None)  # no vocabulary is built: nothing is constrained
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: vocab_size),
                             scheduler_config=SimpleNamespace(max_num_seqs=2))
    first = adapter.GramalignLogitsProcessor(config, "cpu", False)
    second = adapter.GramalignLogitsProcessor(config, "cpu", False)  # entry point + --logits-processors
    other_engine = adapter.GramalignLogitsProcessor(SimpleNamespace(**vars(config)), "cpu", False)
    assert (first._passive, second._passive, other_engine._passive) == (False, True, False)
    update = FakeBatchUpdate(1, [], [(0, params({"regex": "a"}), None, [])], [])
    second.update_state(update)
    logits = torch.zeros(1, vocab_size)
    assert second.apply(logits) is logits and torch.isfinite(logits).all()
    assert len(second._rows) == 0


def test_docstring_examples_of_batch_rows():
    import doctest

    import gramalign.integrations.batch_rows as batch_rows

    result = doctest.testmod(batch_rows, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_the_engine_start_builds_the_vocabulary_and_survives_a_tokenizer_it_cannot_read(monkeypatch, caplog):
    pytest.importorskip("torch")
    from support.tokenizer_zoo import gpt2_hf_fast

    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: 50304),
                             scheduler_config=SimpleNamespace(max_num_seqs=2))
    adapter = _fake_vllm(monkeypatch, gpt2_hf_fast())
    processor = adapter.GramalignLogitsProcessor(config, "cpu", False)
    assert processor._base_vocabulary is not None and processor._base_vocabulary.size == 50304
    adapter = _fake_vllm(monkeypatch, None)  # from_hf cannot read it: logged, the engine goes on
    with caplog.at_level("WARNING"):
        processor = adapter.GramalignLogitsProcessor(SimpleNamespace(**vars(config)), "cpu", False)
    assert processor._base_vocabulary is None
    assert "gramalign: no warm-up" in caplog.text
