"""A GrammarMatcher used by two threads at once raises ConcurrentUseError; compiled grammars
are shared across threads freely, and a matcher may be handed between threads between calls."""

import sys
import threading

import numpy as np
import pytest

import gramalign as ga

TOKENS = [b"{", b"}", b'"', b"a", b"b", b":", b",", b"1", b"2", b" ", b""]
EOS = 10
GRAMMAR = '''
start: "{" NUM ("," NUM)* "}"
NUM: /[0-9]+/
'''


@pytest.fixture(scope="module")
def compiled():
    vocab = ga.Vocabulary(token_bytes=tuple(TOKENS), size=len(TOKENS), special_token_ids=frozenset({EOS}),
                          eos_token_ids=(EOS,), kind="raw")
    return ga.compile(ga.Grammar.from_lark(GRAMMAR), vocab)  # a parser grammar: its pool is what overlaps corrupt


def _walk(matcher, rng, steps):
    """Fill, pick an allowed non-EOS token (rolling back when only EOS is left), accept."""
    bitmask = np.zeros((1, matcher.compiled.bitmask_width), dtype=np.int32)
    for _ in range(steps):
        matcher.fill_next_token_bitmask(bitmask, 0)
        bits = np.unpackbits(bitmask.view(np.uint8), bitorder="little")[: len(TOKENS)]
        allowed = [t for t in np.flatnonzero(bits) if t != EOS]
        if not allowed or matcher.num_accepted_tokens > 40:
            matcher.rollback(matcher.num_accepted_tokens)
            continue
        matcher.accept_token(int(rng.choice(allowed)))


def test_overlapping_call_is_refused_deterministically(compiled):
    """One thread is held inside fill_next_token_bitmask; the other's accept must raise, and the
    state must be what the first thread leaves."""
    matcher = compiled.matcher()
    inside, release = threading.Event(), threading.Event()
    cursor_fill = matcher._cursor.fill

    def slow_fill(state, row):
        inside.set()
        release.wait(5)
        cursor_fill(state, row)

    matcher._cursor.fill = slow_fill
    bitmask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
    filler = threading.Thread(target=matcher.fill_next_token_bitmask, args=(bitmask, 0))
    filler.start()
    assert inside.wait(5)
    try:
        for call in (lambda: matcher.accept_token(0), lambda: matcher.rollback(0), matcher.fork, matcher.reset,
                     lambda: matcher.fill_next_token_bitmask(np.zeros_like(bitmask), 0),
                     lambda: matcher.validate_draft([0, 7])):
            with pytest.raises(ga.ConcurrentUseError, match="another thread is using this matcher"):
                call()
    finally:
        release.set()
        filler.join()
    matcher._cursor.fill = cursor_fill
    assert matcher.num_accepted_tokens == 0
    matcher.accept_token(0)  # usable again once the other thread is out
    assert matcher.validate_draft([7, 6, 8, 1]) == 4  # re-entrant: validate_draft fills and accepts inside


def test_two_threads_hammering_one_matcher(compiled):
    matcher = compiled.matcher()
    errors: list[BaseException] = []
    stop = threading.Event()

    def hammer(seed):
        rng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                _walk(matcher, rng, 50)
        except ga.ConcurrentUseError as error:
            errors.append(error)
            stop.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch often, so the threads overlap within a fraction of a second
    try:
        threads = [threading.Thread(target=hammer, args=(seed,)) for seed in (1, 2)]
        for thread in threads:
            thread.start()
        stop.wait(20)
        stop.set()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors, "two threads used one matcher for 20 s and no overlap was detected"


def test_shared_grammar_and_matchers_handed_between_threads(compiled):
    """The supported patterns raise nothing: one compiled grammar, one matcher per thread (forks
    included), and a matcher passed from thread to thread between calls."""
    base = compiled.matcher()
    base.accept_token(0)
    failures: list[BaseException] = []

    def own(seed):
        try:
            _walk(base.fork() if seed % 2 else compiled.matcher(), np.random.default_rng(seed), 300)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=own, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    handed = compiled.matcher()
    for seed in range(6):
        thread = threading.Thread(target=_walk, args=(handed, np.random.default_rng(seed), 20))
        thread.start()
        thread.join()
    assert handed.num_accepted_tokens <= 41


def test_threads_forking_one_matcher_at_once_take_turns(compiled):
    """Forks only read the matcher: threads forking one shared matcher at the same moment all get
    their copy (CI once saw two forks of one base overlap and the second raise), and each copy
    walks on its own from the base's state."""
    base = compiled.matcher()
    base.accept_token(0)
    base.accept_token(7)
    failures: list[BaseException] = []
    start = threading.Barrier(6)

    def fork_many(seed):
        try:
            start.wait(5)
            for _ in range(200):
                twin = base.fork()
                assert twin.num_accepted_tokens == 2
            _walk(twin, np.random.default_rng(seed), 30)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch inside forks as often as the interpreter can
    try:
        threads = [threading.Thread(target=fork_many, args=(seed,)) for seed in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures
    assert base.num_accepted_tokens == 2


def test_a_fork_overlapping_a_change_still_raises(compiled):
    """The fork gate lets forks wait for forks only: a change that finds a fork inside raises (a
    fork that finds a change inside raises too: the deterministic test above)."""
    matcher = compiled.matcher()
    inside, release = threading.Event(), threading.Event()
    cursor_fork = matcher._cursor.fork

    def slow_fork():
        inside.set()
        release.wait(5)
        return cursor_fork()

    matcher._cursor.fork = slow_fork
    forker = threading.Thread(target=matcher.fork)
    forker.start()
    assert inside.wait(5)
    try:
        with pytest.raises(ga.ConcurrentUseError, match=r"GrammarMatcher\.accept_token was called"):
            matcher.accept_token(0)
    finally:
        release.set()
        forker.join()
    matcher._cursor.fork = cursor_fork
    assert matcher.num_accepted_tokens == 0
