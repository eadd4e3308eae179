"""No cyclic garbage collection starts inside a mask fill of the shipped integrations.

The oracle is the collector itself: ``gc.callbacks`` records every collection start, the
thresholds are set to (1, 1, 1) so that any tracked allocation triggers one, and the
matcher's ``fill_next_token_bitmask`` and ``is_token_allowed`` are wrapped to count the
fills in progress (in any thread). A collection that starts while that count is positive
ran inside a fill. Each integration test also checks that collections did happen during the
run (between fills), and the control tests check that, with the guard made a no-op, the same
runs do see collections inside fills, so these tests can fail.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import gramalign as ga
from gramalign.masking import gc_guard
from gramalign.masking.bitmask import unpack_token_bitmask_numpy
from gramalign.masking.gc_guard import gc_paused
from gramalign.masking.matcher import GrammarMatcher

TOKENS = [b"let", b"l", b"e", b"t", b" ", b" = ", b"=", b"a", b"b", b"ab", b"1", b"2", b"12", b";", b"</s>"]
EOS = len(TOKENS) - 1
LET = r'''
start: "let " NAME " = " NUMBER ";"
NAME: /[ab]{1,4}/
NUMBER: /[12]{1,4}/
'''
REGEX = r"let [ab]{1,4} = [12]{1,4};"


@pytest.fixture(scope="module")
def vocab():
    return ga.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[EOS])


@pytest.fixture(scope="module", params=["regex", "lark"])
def compiled(request, vocab):
    grammar = ga.Grammar.from_regex(REGEX) if request.param == "regex" else ga.Grammar.from_lark(LET)
    return ga.compile(grammar, vocab)


class Watch:
    """Counts fills in progress and the collections that start inside one."""

    def __init__(self):
        self.lock = threading.Lock()
        self.in_fill = 0
        self.fills = 0
        self.collections = 0
        self.inside: list[tuple[int, str]] = []  # (generation, thread name) of collections inside a fill

    def on_gc(self, phase, info):
        if phase == "start":
            self.collections += 1
            if self.in_fill:
                self.inside.append((info["generation"], threading.current_thread().name))

    def wrap(self, method):
        watch = self

        def wrapped(*args, **kwargs):
            with watch.lock:
                watch.in_fill += 1
                watch.fills += 1
            try:
                return method(*args, **kwargs)
            finally:
                with watch.lock:
                    watch.in_fill -= 1

        return wrapped

    def check(self):
        assert self.fills > 0, "nothing was filled"
        assert self.collections > 0, "no collection at all: the oracle saw nothing"
        assert self.inside == [], f"{len(self.inside)} collections started inside a fill: {self.inside[:5]}"


@pytest.fixture
def watch(monkeypatch):
    """Collections on every tracked allocation, recorded; fills (and AWRS checks) counted."""
    watch = Watch()
    monkeypatch.setattr(GrammarMatcher, "fill_next_token_bitmask", watch.wrap(GrammarMatcher.fill_next_token_bitmask))
    monkeypatch.setattr(GrammarMatcher, "is_token_allowed", watch.wrap(GrammarMatcher.is_token_allowed))
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.collect()
    gc.enable()
    gc.callbacks.append(watch.on_gc)
    gc.set_threshold(1, 1, 1)
    try:
        yield watch
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(watch.on_gc)
        (gc.enable if enabled else gc.disable)()


def no_guard(monkeypatch):
    """Make gc_paused a no-op everywhere it is used (one shared instance)."""
    monkeypatch.setattr(gc_guard._GCPaused, "__enter__", lambda self: None)
    monkeypatch.setattr(gc_guard._GCPaused, "__exit__", lambda self, *exc: False)


def allowed_choice(bitmask_row, vocab_size, rng):
    allowed = np.flatnonzero(unpack_token_bitmask_numpy(bitmask_row[None, :], vocab_size)[0])
    return int(rng.choice(allowed))


# -- the logits processor -------------------------------------------------------------------


def run_processor(compiled, steps=24, batch=3, seed=0):
    """Calls as model.generate makes them: each adds the token chosen under the last mask."""
    vocab_size = compiled.vocabulary.size
    processor = ga.GrammarLogitsProcessor(compiled)
    rng = np.random.default_rng(seed)
    input_ids = torch.tensor([[4, 4]] * batch)
    for _ in range(steps):
        scores = processor(input_ids, torch.zeros(batch, vocab_size))
        chosen = [int(rng.choice(np.flatnonzero(torch.isfinite(row).numpy()))) for row in scores]
        input_ids = torch.cat([input_ids, torch.tensor(chosen)[:, None]], dim=1)
    return input_ids


def test_processor_fills_see_no_collection(watch, compiled):
    run_processor(compiled)
    watch.check()


# -- BatchMatcher ---------------------------------------------------------------------------


def run_batch(compiled, num_threads, steps=24, batch=4, seed=0):
    vocab_size = compiled.vocabulary.size
    matchers = ga.BatchMatcher(compiled, batch, num_threads=num_threads)
    bitmask = ga.allocate_token_bitmask_numpy(batch, vocab_size)
    rng = np.random.default_rng(seed)
    try:
        for _ in range(steps):
            matchers.fill_next_token_bitmask(bitmask)
            matchers.accept_tokens([allowed_choice(bitmask[row], vocab_size, rng) for row in range(batch)])
    finally:
        matchers.close()


@pytest.mark.parametrize("num_threads", [None, 2])
def test_batch_fills_see_no_collection(watch, compiled, num_threads):
    run_batch(compiled, num_threads)
    watch.check()


# -- gramalign.generate and its samplers ------------------------------------------------------


class ToyTokenizer:
    """Just what ga.generate reads: ``tokenizer(text).input_ids`` and ``encode`` (greedy longest match)."""

    chat_template = None

    def encode(self, text, add_special_tokens=False):
        data, ids = text.encode(), []
        while data:
            token = max((i for i, t in enumerate(TOKENS[:EOS]) if data.startswith(t)), key=lambda i: len(TOKENS[i]))
            ids.append(token)
            data = data[len(TOKENS[token]):]
        return ids

    def __call__(self, text):
        return SimpleNamespace(input_ids=self.encode(text))


@pytest.fixture(scope="module")
def toy_model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(TOKENS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                         bos_token_id=EOS, eos_token_id=EOS, pad_token_id=EOS)
    return LlamaForCausalLM(config).eval()


SAMPLER_RUNS = [("masked", {}), ("masked", {"jump_forward": True}), ("asap", {}), ("awrs", {}),
                ("smc", {"num_particles": 3})]


def run_generate(model, compiled, sampler, options, seed=0):
    out = ga.generate(model, ToyTokenizer(), "let", grammar=compiled, sampler=sampler, max_new_tokens=16, seed=seed,
                      **options)
    assert compiled.matcher().accept_string(out.text) is None  # a prefix of the language, at least
    return out


@pytest.mark.parametrize("sampler, options", SAMPLER_RUNS, ids=["masked", "jump_forward", "asap", "awrs", "smc"])
def test_generate_fills_see_no_collection(watch, compiled, toy_model, sampler, options):
    run_generate(toy_model, compiled, sampler, options)
    watch.check()


# -- the oracle can fail ----------------------------------------------------------------------


def test_without_the_guard_collections_do_start_inside_fills(watch, compiled, toy_model, monkeypatch):
    """Control: the same runs with the guard made a no-op are caught by the checks above."""
    no_guard(monkeypatch)
    runs = {"processor": lambda: run_processor(compiled), "batch": lambda: run_batch(compiled, None),
            "batch, 2 threads": lambda: run_batch(compiled, 2)}
    runs.update({f"generate {sampler} {options}": (lambda s=sampler, o=options: run_generate(toy_model, compiled, s, o))
                 for sampler, options in SAMPLER_RUNS})
    for name, run in runs.items():
        watch.inside.clear()
        run()
        with pytest.raises(AssertionError, match="collections started inside a fill"):
            watch.check()


# -- the guard restores the collector's state exactly ----------------------------------------


@pytest.fixture(params=[True, False], ids=["enabled", "disabled"])
def gc_state(request):
    before = gc.isenabled()
    (gc.enable if request.param else gc.disable)()
    try:
        yield request.param
    finally:
        (gc.enable if before else gc.disable)()


def test_guard_restores_state_after_nesting_and_errors(gc_state):
    with gc_paused:
        assert not gc.isenabled()
        with gc_paused:
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner exit does not re-enable
    assert gc.isenabled() is gc_state
    with pytest.raises(KeyError):
        with gc_paused:
            with gc_paused:
                raise KeyError("inside")
    assert gc.isenabled() is gc_state
    assert gc_guard._depth == 0


def test_integrations_restore_state_when_a_fill_raises(gc_state, compiled):
    vocab_size = compiled.vocabulary.size
    for num_threads in (None, 2):
        batch = ga.BatchMatcher(compiled, 3, num_threads=num_threads)
        with pytest.raises(ValueError, match="words but the vocabulary"):  # raised inside a row's fill
            batch.fill_next_token_bitmask(np.zeros((3, 7), dtype=np.int32))
        assert gc.isenabled() is gc_state
        batch.fill_next_token_bitmask(ga.allocate_token_bitmask_numpy(3, vocab_size))
        assert gc.isenabled() is gc_state
        batch.close()
    processor = ga.GrammarLogitsProcessor(compiled)
    ids = torch.tensor([[4, 4]])
    processor(ids, torch.zeros(1, vocab_size))
    with pytest.raises(ga.TokenRejected):  # "=" cannot start the text: raised inside the guard
        processor(torch.tensor([[4, 4, 6]]), torch.zeros(1, vocab_size))
    assert gc.isenabled() is gc_state
    assert gc_guard._depth == 0


def test_threaded_batch_waits_for_every_row_before_leaving_the_guard(gc_state, compiled, monkeypatch):
    """A row that fails at once must not end the guard while another row is still filling."""
    batch = ga.BatchMatcher(compiled, 2, num_threads=2)
    seen = []

    def fail(bitmask, index=0):
        raise RuntimeError("row 0 fails")

    def slow(bitmask, index=0):
        time.sleep(0.2)
        seen.append(gc.isenabled())

    monkeypatch.setattr(batch.matchers[0], "fill_next_token_bitmask", fail)
    monkeypatch.setattr(batch.matchers[1], "fill_next_token_bitmask", slow)
    with pytest.raises(RuntimeError, match="row 0 fails"):
        batch.fill_next_token_bitmask(ga.allocate_token_bitmask_numpy(2, compiled.vocabulary.size))
    assert seen == [False]  # the slow row finished, paused, before the call returned
    assert gc.isenabled() is gc_state
    batch.close()


class NaiveGuard:
    """The wrong design: each guard saves and restores the collector's state on its own."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


def interleave(guard_for_thread):
    """A enters, B enters, A leaves, B looks, B leaves: what B saw and the state after."""
    a_in, b_in, a_out, b_looked = (threading.Event() for _ in range(4))
    seen = {}

    def a():
        with guard_for_thread():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b():
        a_in.wait(5)
        with guard_for_thread():
            b_in.set()
            a_out.wait(5)
            seen["enabled inside B"] = gc.isenabled()
        b_looked.set()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return seen["enabled inside B"], gc.isenabled()


def test_guard_held_by_two_threads_stays_paused_until_the_last_leaves(gc_state):
    inside, after = interleave(lambda: gc_paused)
    assert not inside and after is gc_state
    assert gc_guard._depth == 0


def test_the_two_thread_check_catches_a_naive_guard():
    assert gc.isenabled()
    inside, after = interleave(NaiveGuard)
    assert inside  # A's exit re-enabled the collector while B was still inside its guard


def test_guard_under_many_threads(gc_state):
    violations = []
    barrier = threading.Barrier(6)

    def work(seed):
        rng = np.random.default_rng(seed)
        barrier.wait()
        for _ in range(300):
            with gc_paused:
                if gc.isenabled():
                    violations.append("enabled in a guard")
                if rng.random() < 0.3:
                    with gc_paused:
                        time.sleep(0)
                time.sleep(0)
                if gc.isenabled():
                    violations.append("enabled in a guard")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert violations == []
    assert gc.isenabled() is gc_state and gc_guard._depth == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_starts_with_a_usable_guard_and_the_collector_restored():
    """Guards held by other threads at fork time would never be left in the child."""
    assert gc.isenabled()
    entered, release = threading.Event(), threading.Event()

    def hold():
        with gc_paused:
            gc_guard._acquire()  # also hold the lock itself across the fork
            entered.set()
            release.wait(10)
            gc_guard._release()

    holder = threading.Thread(target=hold)
    holder.start()
    entered.wait(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python 3.12+)
        pid = os.fork()
    if pid == 0:  # the child: report through the exit code, never return into pytest
        code = 1
        try:
            if gc.isenabled():
                with gc_paused:
                    if not gc.isenabled():
                        code = 0
                if not gc.isenabled():
                    code = 2
        finally:
            os._exit(code)
    release.set()
    holder.join(10)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in the guard")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gc.isenabled() and gc_guard._depth == 0


def test_freeze_gc_is_opt_in(monkeypatch):
    calls = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append("collect") or 0)
    compiled = ga.compile(ga.Grammar.from_regex("ab?"), ga.Vocabulary.from_token_bytes([b"a", b"b", b"!"],
                                                                                         eos_token_ids=[2]))
    ga.BatchMatcher(compiled, 1).fill_next_token_bitmask(ga.allocate_token_bitmask_numpy(1, 3))
    assert calls == []  # nothing freezes behind the user's back
    assert ga.freeze_gc() == gc.get_freeze_count()
    assert calls == ["collect", "freeze"]  # garbage collected first, so none is frozen


@pytest.mark.parametrize("source", ["lark", "schema"])
def test_a_compiled_grammar_is_freed_without_the_cyclic_collector(source):
    # fills run with the collector paused, so a reference cycle through a compiled grammar
    # (its mask store, contexts, stack parts) would keep it, and its masks, alive for long
    # (built here, not by ga.compile, whose cache keeps recent grammars on purpose)
    import weakref

    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.masking.cfg import GrammarMaskStore
    from gramalign.masking.compiler import CompiledGrammar, token_trie

    vocab = ga.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[EOS])
    grammar = (ga.Grammar.from_lark(LET) if source == "lark"
               else ga.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}))
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        compiled = CompiledGrammar(grammar, vocab, store=GrammarMaskStore(build_parser_tables(grammar), vocab,
                                                                           token_trie(vocab)))
        compiled.store.contexts.walk_first = lambda *args: False  # classified, not walked, on a first visit
        matcher = compiled.matcher()
        bitmask = ga.allocate_token_bitmask_numpy(1, vocab.size)
        for _ in range(4):  # fill, then take an allowed token, so every part of the store is built
            matcher.fill_next_token_bitmask(bitmask)
            allowed = np.flatnonzero(unpack_token_bitmask_numpy(bitmask, vocab.size)[0])
            if not allowed.size or allowed[0] == EOS:
                break
            matcher.accept_token(int(allowed[0]))
        assert compiled.store is not None and len(compiled.store.contexts) > 0
        store = weakref.ref(compiled.store)
        del compiled, matcher
        assert store() is None
    finally:
        if was_enabled:
            gc.enable()
