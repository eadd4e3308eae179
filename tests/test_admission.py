"""Request constraints checked off the serving path (integrations/admission, built_grammars,
vllm_admission), without vLLM.

The oracles: a grammar loaded from another process's build gives the masks of a grammar built
here (compared row by row on random walks); the admission refuses exactly what building the
grammar in place refuses, with the same message; the middleware hands vLLM the request body it
received, byte for byte, and answers a refused constraint with vLLM's error body.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process
import gc
import json
import os
import pickle
import random
import stat
import time
import weakref

import numpy as np
import pytest

import gramalign as ga
from gramalign.integrations import batch_rows, built_grammars
from gramalign.integrations.admission import Admission
from gramalign.integrations.batch_rows import ConstraintError, RequestConstraint, parse_request_constraint
from gramalign.integrations.vllm_admission import GramalignAdmission
from gramalign.grammar.json_schema.schema_grammar import SchemaGrammar
from gramalign.grammar.automata.cache import clear_automaton_caches
from gramalign.grammar.grammar import HANDED_TABLES_ATTRIBUTE
from gramalign.grammar.parser_tables import build_parser_tables, remember_parser_tables
from gramalign.masking.cfg import disk_cache

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99},
                                           "tags": {"type": "array", "items": {"enum": ["a", "bc"]}, "maxItems": 2},
                                           "ok": {"type": "boolean"}}, "required": ["n", "ok"]}
# Builds in well over the quick lane's 50 ms, well within a second.
SLOW_SCHEMA = {"oneOf": [{"type": "string", "pattern": f"a{i}"} for i in range(150)]}


def _vocabulary() -> ga.Vocabulary:
    pieces = [bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b"true", b"false", b'"n":', b", ", b'["']
    return ga.Vocabulary.from_token_bytes(pieces + [b""], eos_token_ids=[len(pieces)],
                                          special_token_ids=[len(pieces)])


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One folder for the module: the workers, started once, read the variable when they start."""
    folder = tmp_path_factory.mktemp("admission") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRAMALIGN_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def admission(cache_dir):
    admission = Admission(workers=1)
    yield admission
    admission.close()


def _constraint(spec) -> RequestConstraint:
    return parse_request_constraint({"gramalign": json.dumps(spec)})


def _masks_along_walks(compiled: ga.CompiledGrammar, seed: int, walks: int = 6) -> list[np.ndarray]:
    rng = random.Random(seed)
    rows = []
    for _ in range(walks):
        matcher = compiled.matcher()
        for _ in range(40):
            allowed = matcher.allowed_token_ids()
            rows.append(allowed)
            if matcher.is_terminated() or not allowed.size:
                break
            token = int(rng.choice(list(allowed)))  # noqa: S311
            if token in compiled.vocabulary.eos_token_ids:
                break
            matcher.accept_token(token)
    return rows


@pytest.mark.parametrize("spec", [{"json_schema": SCHEMA}, {"regex": r"(ab|c)+d"},
                                  {"lark": 'start: "x" ("+" "x")* ";"'}])
def test_a_loaded_grammar_gives_the_masks_of_one_built_here(cache_dir, spec):
    constraint = _constraint(spec)
    grammar = constraint._build()
    tables = None
    if grammar.single_terminal() is None:
        tables = build_parser_tables(grammar)
    assert built_grammars.save(constraint, grammar, tables)
    loaded, loaded_tables = built_grammars.load(constraint)
    assert loaded == grammar and loaded is not grammar
    if tables is not None:
        assert loaded_tables.grammar is loaded
        assert loaded_tables.table.action.flags.writeable and loaded_tables.reach_bits.flags.writeable
    vocabulary = _vocabulary()
    fresh = _masks_along_walks(ga.compile(grammar, vocabulary, cache=False), seed=1)
    if loaded_tables is not None:
        remember_parser_tables(loaded_tables)
    again = _masks_along_walks(ga.compile(loaded, vocabulary, cache=False), seed=1)
    assert len(fresh) == len(again) and all(np.array_equal(a, b) for a, b in zip(fresh, again))


def test_equal_grammars_of_different_constraints_load_as_one_object(cache_dir):
    """A schema's title changes the constraint, not the grammar: the second load is the first
    one's grammar object, with its parser tables and compiled masks (an equal copy would be
    unpickled, hashed and compared field by field: seconds in an engine's step for a large
    one), and its digest is the one computed where it was built."""
    first, second = (_constraint({"json_schema": {**SLOW_SCHEMA, "title": title}}) for title in ("one", "two"))
    assert first != second
    for constraint in (first, second):
        grammar = constraint._build()
        assert built_grammars.save(constraint, grammar, build_parser_tables(grammar))
    loaded, tables = built_grammars.load(first)
    again, again_tables = built_grammars.load(second)
    assert again is loaded and again_tables is tables and tables.grammar is loaded and loaded == grammar
    assert build_parser_tables(loaded) is tables
    assert disk_cache.grammar_digest(loaded) == disk_cache._grammar_digest(loaded) == disk_cache._grammar_digest(grammar)
    vocabulary = _vocabulary()
    assert ga.compile(again, vocabulary, eager=False) is ga.compile(loaded, vocabulary, eager=False)


def test_handed_parser_tables_go_with_their_grammar():
    grammar = ga.Grammar.from_lark('start: "x" ("+" "x")* ";"')
    tables = pickle.loads(pickle.dumps(build_parser_tables(grammar)))  # as another process built them
    copy = tables.grammar
    remember_parser_tables(tables)
    assert build_parser_tables(copy) is tables
    assert HANDED_TABLES_ATTRIBUTE not in pickle.loads(pickle.dumps(copy)).__dict__
    alive = weakref.ref(copy)
    del copy, tables
    clear_automaton_caches()
    gc.collect()
    assert alive() is None


def test_built_grammars_are_not_read_from_a_folder_others_can_write(cache_dir, caplog):
    constraint = _constraint({"regex": "[0-9]+"})
    assert built_grammars.save(constraint, constraint._build(), None)
    folder = cache_dir / "built"
    folder.chmod(folder.stat().st_mode | stat.S_IWOTH)
    assert built_grammars.load(constraint) is None
    assert "writable by others" in caplog.text
    folder.chmod(0o700)
    assert built_grammars.load(constraint) is not None


def test_a_damaged_or_foreign_file_is_ignored(cache_dir, caplog):
    constraint = _constraint({"regex": "[0-9]+"})
    assert built_grammars.save(constraint, constraint._build(), None)
    path = cache_dir / "built" / built_grammars.file_name(constraint)
    path.write_bytes(path.read_bytes()[:40])
    assert built_grammars.load(constraint) is None
    path.write_bytes(b"")
    assert built_grammars.load(constraint) is None
    other = _constraint({"regex": "[a-z]+"})
    assert built_grammars.file_name(other) != built_grammars.file_name(constraint)
    assert built_grammars.load(other) is None


def test_the_file_name_follows_the_code(cache_dir, monkeypatch):
    constraint = _constraint({"regex": "[0-9]+"})
    before = built_grammars.file_name(constraint)
    monkeypatch.setattr(built_grammars, "_code_digest", "0" * 64)
    assert built_grammars.file_name(constraint) != before


@pytest.mark.parametrize("spec", [
    {"regex": "(unclosed"},
    {"json_schema": {"type": "array", "minItems": 10 ** 30}},
    {"json_schema": {"type": "nonsense"}},
    {"lark": "start: undefined_rule"},
])
def test_admission_refuses_what_building_in_place_refuses_with_the_same_message(admission, cache_dir, spec):
    with pytest.raises(ConstraintError) as in_place:
        _constraint(spec)._build()
    with pytest.raises(ConstraintError) as admitted:
        asyncio.run(admission.admit({"gramalign": json.dumps(spec)}))
    assert str(admitted.value) == str(in_place.value)
    assert not batch_rows.admitted(_constraint(spec))


def test_malformed_constraints_are_refused_without_a_worker():
    admission = Admission(workers=1)
    with pytest.raises(ConstraintError, match="exactly one of"):
        asyncio.run(admission.admit({"gramalign": json.dumps({"regex": "a", "lark": "b"})}))
    assert admission._full._pool is None and admission._quick._pool is None
    assert asyncio.run(admission.admit({"other": 1})) is None


def test_admitted_constraints_are_not_built_again_and_engines_load_the_slow_ones(admission, cache_dir, monkeypatch):
    constraint = asyncio.run(admission.admit({"gramalign": json.dumps({"json_schema": SLOW_SCHEMA})}))
    assert constraint == _constraint({"json_schema": SLOW_SCHEMA}) and batch_rows.admitted(constraint)
    assert (cache_dir / "built" / built_grammars.file_name(constraint)).exists()
    monkeypatch.setattr(RequestConstraint, "_build", lambda self, whole=True: pytest.fail("built again"))
    constraint.check()  # validate_params in the server: nothing to do
    grammar = constraint.grammar(whole=False)  # the engine: loaded, not built
    monkeypatch.undo()
    assert grammar == constraint._build()


def test_a_quickly_built_schema_is_checked_whole_at_admission_and_built_lazily_by_the_engine(admission, cache_dir,
                                                                                             monkeypatch):
    spec = {"json_schema": {**SCHEMA, "title": "engine builds"}}
    constraint = asyncio.run(admission.admit({"gramalign": json.dumps(spec)}))
    assert batch_rows.admitted(constraint)
    assert not (cache_dir / "built" / built_grammars.file_name(constraint)).exists()  # nothing saved
    monkeypatch.setattr(RequestConstraint, "_build", lambda self, whole=True: pytest.fail("built whole"))
    constraint.check()
    monkeypatch.undo()
    grammar = constraint.grammar(whole=False)
    assert isinstance(grammar, SchemaGrammar)
    vocabulary = _vocabulary()
    lazy = ga.compile(grammar, vocabulary, eager=False)
    assert lazy.store.tables.built_on_demand
    # the same masks as the whole grammar's, along the same walks
    whole = ga.compile(constraint._build(), vocabulary, eager=True)
    for a, b in zip(_masks_along_walks(lazy, 7), _masks_along_walks(whole, 7), strict=True):
        assert np.array_equal(a, b)
    # a bad part is refused at admission, though the root alone builds
    bad = {"json_schema": {"type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}},
                           "title": "bad part"}}
    with pytest.raises(ConstraintError, match="pattern"):
        asyncio.run(admission.admit({"gramalign": json.dumps(bad)}))


def test_equal_constraints_arriving_together_share_one_build_which_goes_on_to_the_full_budget(admission, cache_dir):
    spec = {"json_schema": {**SLOW_SCHEMA, "title": "shared"}}

    async def together():
        return await asyncio.gather(*(admission.admit({"gramalign": json.dumps(spec)}) for _ in range(5)))

    calls = {"quick": 0, "full": 0}
    for name, lane in (("quick", admission._quick), ("full", admission._full)):
        pool = lane.pool()
        pool.submit = lambda *args, name=name, submit=pool.submit: calls.update({name: calls[name] + 1}) or submit(*args)
    try:
        results = asyncio.run(together())
    finally:
        del admission._quick.pool().submit, admission._full.pool().submit
    assert len(set(results)) == 1 and calls == {"quick": 1, "full": 1}


def test_a_build_over_the_request_budget_is_refused_alone(cache_dir):
    admission = Admission(workers=1, limits=ga.CompileLimits(max_compile_seconds=0.02), quick_seconds=0.01)
    try:
        async def both():
            schema = {**SLOW_SCHEMA, "title": "over budget"}
            return await asyncio.gather(admission.admit({"gramalign": json.dumps({"json_schema": schema})}),
                                        admission.admit({"gramalign": json.dumps({"regex": "[0-9]+"})}),
                                        return_exceptions=True)

        slow, quick = asyncio.run(both())
    finally:
        admission.close()
    assert isinstance(slow, ConstraintError) and "max_compile_seconds" in str(slow)
    assert quick == _constraint({"regex": "[0-9]+"})


class _App:
    """vLLM's app as the middleware sees it: records each request's body and answers 200."""

    def __init__(self):
        self.bodies = []

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _post(middleware, body: bytes, chunk: int = 7, method: str = "POST"):
    chunks = [body[i:i + chunk] for i in range(0, len(body), chunk)] or [b""]
    messages = [{"type": "http.request", "body": part, "more_body": i + 1 < len(chunks)}
                for i, part in enumerate(chunks)]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(middleware({"type": "http", "method": method, "path": "/v1/chat/completions"}, receive, send))
    status = sent[0]["status"]
    return status, b"".join(message.get("body", b"") for message in sent[1:])


def test_the_middleware_passes_bodies_through_and_refuses_bad_constraints_with_400(admission, cache_dir):
    app = _App()
    middleware = GramalignAdmission(app, admission)
    plain = json.dumps({"model": "m", "messages": [{"role": "user", "content": "h\u00e9llo"}]}).encode()
    good = json.dumps({"model": "m", "vllm_xargs": {"gramalign": json.dumps({"json_schema": SCHEMA})}}).encode()
    bad = json.dumps({"model": "m", "vllm_xargs": {"gramalign": json.dumps({"regex": "(unclosed"})}}).encode()
    hidden = good.replace(b'"gramalign"', b'"\\u0067ramalign"')  # the same key, escaped
    assert _post(middleware, plain) == (200, b"ok")
    assert _post(middleware, b"not json at all") == (200, b"ok")
    assert _post(middleware, good) == (200, b"ok")
    assert _post(middleware, good, method="GET") == (200, b"ok")
    assert app.bodies == [plain, b"not json at all", good, good]
    for body in (bad, bad.replace(b'"gramalign"', b'"\\u0067ramalign"')):
        status, answer = _post(middleware, body)
        error = json.loads(answer)["error"]
        assert status == 400 and error["code"] == 400 and error["type"] == "BadRequestError"
        assert error["message"].startswith("gramalign could not compile the request's regex: RegexError")
    assert len(app.bodies) == 4
    assert _post(middleware, hidden) == (200, b"ok") and app.bodies[-1] == hidden


class _BreakingPool:
    """A worker pool whose first ``breaks`` builds end as if a worker had died; then builds run here."""

    def __init__(self, breaks: int):
        self.breaks = breaks
        self.submitted = 0
        self._processes = {}

    def submit(self, function, *args):
        self.submitted += 1
        future = concurrent.futures.Future()
        if self.breaks:
            self.breaks -= 1
            future.set_exception(concurrent.futures.process.BrokenProcessPool("a worker died"))
        else:
            future.set_result(function(*args))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


@pytest.mark.parametrize("breaks, admitted_after", [(1, True), (2, False)])
def test_a_build_broken_by_another_is_tried_again_and_a_culprit_refused(cache_dir, monkeypatch, breaks,
                                                                          admitted_after):
    admission = Admission(workers=1)
    pool = _BreakingPool(breaks)
    for lane in (admission._quick, admission._full):
        monkeypatch.setattr(lane, "pool", lambda: pool)
    spec = {"regex": f"[0-9]{{{breaks}}}x"}
    if admitted_after:
        assert asyncio.run(admission.admit({"gramalign": json.dumps(spec)})) == _constraint(spec)
    else:
        with pytest.raises(ConstraintError, match="killed its worker process"):
            asyncio.run(admission.admit({"gramalign": json.dumps(spec)}))
    assert pool.submitted == 2
    assert batch_rows.admitted(_constraint(spec)) == admitted_after


def test_the_folder_keeps_the_most_recent_files_within_its_size(tmp_path, monkeypatch):
    cache_dir = tmp_path / "own"
    monkeypatch.setenv("GRAMALIGN_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(built_grammars, "TRIM_EVERY_BYTES", 0)
    constraints = [_constraint({"regex": f"[0-9]{{{n}}}z"}) for n in range(1, 7)]
    sizes = []
    for constraint in constraints:
        assert built_grammars.save(constraint, constraint._build(), None)
        path = cache_dir / "built" / built_grammars.file_name(constraint)
        sizes.append(path.stat().st_size)
        os.utime(path, (len(sizes), len(sizes)))  # written one after the other, whatever the clock
    monkeypatch.setattr(built_grammars, "FOLDER_BYTES", sum(sizes[-3:]))
    keep = _constraint({"regex": "kept"})
    assert built_grammars.save(keep, keep._build(), None)
    present = [built_grammars.load(constraint) is not None for constraint in constraints]
    total = sum(path.stat().st_size for path in (cache_dir / "built").glob("*.pickle"))
    assert total <= sum(sizes[-3:]) and built_grammars.load(keep) is not None
    assert present == sorted(present) and not present[0] and present[-1]  # the oldest went first


@pytest.mark.parametrize("workers, seconds", [("two", ""), ("0", ""), ("2", "soon"), ("2", "-1"), ("2", "nan")])
def test_settings_from_the_environment_are_checked(monkeypatch, workers, seconds):
    monkeypatch.setenv("GRAMALIGN_ADMISSION_WORKERS", workers)
    monkeypatch.setenv("GRAMALIGN_ADMISSION_SECONDS", seconds)
    with pytest.raises(ga.GramalignError, match="GRAMALIGN_ADMISSION_WORKERS="):
        Admission.from_environment()


def test_settings_from_the_environment_are_used(monkeypatch):
    monkeypatch.setenv("GRAMALIGN_ADMISSION_WORKERS", "3")
    monkeypatch.setenv("GRAMALIGN_ADMISSION_SECONDS", "1.5")
    admission = Admission.from_environment()
    assert admission._full.workers == 3 and admission.limits.max_compile_seconds == 1.5
    assert admission.quick_limits.max_compile_seconds == 0.05 and admission._full._pool is None


class _HangingPool(_BreakingPool):
    """A worker pool whose builds never finish (a hang, or numba compiling for longer than the grace)."""

    def __init__(self):
        super().__init__(0)

    def submit(self, function, *args):
        self.submitted += 1
        return concurrent.futures.Future()


def test_a_quick_build_past_its_deadline_goes_on_to_the_full_lane_and_a_full_one_is_refused(cache_dir, monkeypatch):
    admission = Admission(workers=1, limits=ga.CompileLimits(max_compile_seconds=0.1), grace=0.2)
    quick, full = _HangingPool(), _BreakingPool(0)
    monkeypatch.setattr(admission._quick, "pool", lambda: quick)
    monkeypatch.setattr(admission._full, "pool", lambda: full)
    spec = {"regex": "[0-9]+hang"}
    assert asyncio.run(admission.admit({"gramalign": json.dumps(spec)})) == _constraint(spec)
    assert quick.submitted == 1 and full.submitted == 1
    monkeypatch.setattr(admission._full, "pool", lambda: _HangingPool())
    with pytest.raises(ConstraintError, match="did not compile within"):
        asyncio.run(admission.admit({"gramalign": json.dumps({"regex": "[0-9]+stuck"})}))


def test_budgets_in_cpu_time_leave_out_waiting(monkeypatch):
    from gramalign.grammar import limits

    budget = ga.CompileLimits(max_compile_seconds=0.05)
    with pytest.raises(ga.LimitExceeded, match="max_compile_seconds"):
        with limits.applied(budget):
            time.sleep(0.1)  # waiting, as a worker at a low priority waits for a core
            limits.check_time("wall time")
    monkeypatch.setattr(limits, "_clock", limits._clock)  # restored after the test
    limits.count_cpu_time()
    with limits.applied(budget):
        time.sleep(0.1)
        limits.check_time("cpu time")  # nothing spent
        with pytest.raises(ga.LimitExceeded, match="max_compile_seconds"):
            started = time.process_time()
            while time.process_time() - started < 0.1:  # work
                pass
            limits.check_time("cpu time")


def test_a_lane_is_warmed_up_whenever_its_workers_start():
    from gramalign.integrations.admission import _Lane

    started = []
    lane = _Lane(2, on_start=lambda pool, workers: started.append((pool, workers)))
    try:
        first = lane.pool()
        assert lane.pool() is first and started == [(first, 2)]
        lane.stop(kill=True, pool=first)
        second = lane.pool()
        assert second is not first and started == [(first, 2), (second, 2)]
    finally:
        lane.stop(kill=False)
