"""Compile budgets: the one place that says how much a compile may cost.

A server compiles what its users send, so every front end (``Grammar.from_json_schema``,
``from_lark``, ``from_regex``) and :func:`gramalign.compile` take ``limits=`` a
:class:`CompileLimits` (the defaults below when omitted). Sizes are checked before the
work they bound (an automaton, a table, a run of rules is refused from an estimate, not
after it was built); wall time is checked inside the long Python loops (the JSON-Schema
evaluator and emitter, every automaton operation, the LALR and lexer construction), and the
numba kernels between those checks are bounded by state counts. Exceeding a budget raises
:class:`~gramalign.errors.LimitExceeded` naming the limit, what was reached and where.

The budget of the compile running in this thread (or task) lives in a context variable, so
the deep layers read it without every signature carrying it; a compile started inside
another (a grammar compiled while a schema compiles) keeps the earlier of the two deadlines.
docs/limits.md documents the table.
"""

from __future__ import annotations

import contextvars
import math
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, fields

from ..errors import LimitExceeded
from ..kernel_cache import WAIT_EVENT

__all__ = ["CompileLimits", "DEFAULT_LIMITS", "active_limits", "applied", "check_estimate", "check_size",
           "check_time"]


@dataclass(frozen=True)
class CompileLimits:
    """Budgets of one compile; see docs/limits.md for what each bounds.

    ``max_compile_seconds`` may be None (no wall-time limit); every other field is a
    positive integer.
    """

    max_compile_seconds: "float | None" = 10.0
    """Wall time of one front-end call or one ``compile`` (seconds), not counting numba's
    compilation of gramalign's own kernels on their first use in a process (a fresh
    environment's first compile waits for it, whatever the input). Real schemas compile within
    2 s but for rare ones (one of MaskBench's 7,909 takes ~10 s, see docs/limits.md); a server
    sets what one request may cost."""
    max_memory_bytes: int = 512 << 20
    """Growth of the process's resident memory while one front-end call or ``compile`` runs,
    sampled with the wall time (Linux; elsewhere unchecked), numba's compilation of its own
    kernels left out. The largest real grammars and schemas grow it by tens of MiB, the
    largest hostile inputs that compile by ~300 MiB. Concurrent compiles in other threads
    count too, so a server running many at once raises it or limits their number."""
    max_schema_bytes: int = 16 << 20
    """Schema text (characters of a str, bytes of bytes)."""
    max_grammar_chars: int = 50_000
    """Lark grammar text or regex pattern (characters): lark's own loader, which cannot be
    interrupted, takes ~40 µs a character on large grammars (20,000 rules: 20 s)."""
    max_states: int = 50_000
    """States of any one automaton a JSON Schema builds (the ``max_states`` option)."""
    max_rules: int = 200_000
    """Grammar rules a JSON Schema compiles to; array bounds (minItems/maxItems) above it are
    refused up front, since every position up to them is a rule."""
    max_branches: int = 10_000
    """Branches of one anyOf/oneOf/allOf."""
    max_enum: int = 200_000
    """Members of one enum."""
    max_lexer_states: int = 200_000
    """States of a grammar's lexer automaton (terminals that multiply)."""
    max_work_bytes: int = 512 << 20
    """Scratch memory of one automaton step, estimated before it is allocated (the code point
    ranges of a large Unicode automaton before its UTF-8 encoding)."""
    max_subset_work: int = 100_000_000
    """NFA states one determinisation may visit (its time follows: wide subsets, as in
    ``(a{1,100}){1,100}``, took 18 s in a few hundred DFA states)."""
    max_table_bytes: int = 512 << 20
    """Bytes of the LALR action table (states x terminals x 4), checked before allocating."""
    max_union_work: int = 50_000_000
    """Work of one ``anyOf``/``oneOf``, estimated from its branches before their products:
    automaton states the chain of string and number unions visits (each step at least the
    union so far and the next branch), or, for object and array branches that ``oneOf``
    must tell apart, 1,000 per complement meet (one per ordered pair of branches)."""

    def __post_init__(self):
        seconds = self.max_compile_seconds
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not seconds > 0 or math.isnan(seconds)):
            raise ValueError(f"CompileLimits.max_compile_seconds must be a positive number or None, not {seconds!r}")
        for field in fields(self):
            if field.name == "max_compile_seconds":
                continue
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"CompileLimits.{field.name} must be a positive integer, not {value!r}")


DEFAULT_LIMITS = CompileLimits()


@dataclass
class _Budget:
    limits: CompileLimits
    started: float  # work_clock()
    deadline: float  # work_clock(); math.inf without a time limit
    seconds: "float | None"  # the setting the deadline came from (for the message)
    resident_at_start: int  # bytes, or -1 where unknown; numba's growth (_JIT.resident) left out
    next_memory_check: float = 0.0


_ACTIVE: "contextvars.ContextVar[_Budget | None]" = contextvars.ContextVar("gramalign_compile_budget", default=None)

MEMORY_CHECK_SECONDS = 0.01
"""How often ``check_time`` samples the resident memory (reading it costs ~10 µs)."""


_clock = time.monotonic  # see count_cpu_time


class _JitClock:
    """Seconds numba has spent compiling (or loading) kernels in this process, and the
    resident memory that grew meanwhile (outermost compiles only): a first use of a kernel
    costs the same whatever the input, so budgets leave it out."""

    def __init__(self):
        self.seconds = 0.0
        self.resident = 0
        self._local = threading.local()

    def on_start(self, event) -> None:
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.began = _clock()
            self._local.resident = _resident_bytes()
        self._local.depth = depth + 1

    def on_end(self, event) -> None:
        self._local.depth -= 1
        if self._local.depth == 0:
            self.seconds += _clock() - self._local.began
            self.resident += max(0, _resident_bytes() - self._local.resident)


_JIT = _JitClock()
try:
    from numba.core import event as _numba_event

    class _JitListener(_numba_event.Listener):
        def on_start(self, event):
            _JIT.on_start(event)

        def on_end(self, event):
            _JIT.on_end(event)

    _numba_event.register("numba:compile", _JitListener())
    _numba_event.register(WAIT_EVENT, _JitListener())  # (waiting for another process's compile)
except (ImportError, AttributeError):  # pragma: no cover - a numba without its event API
    pass


_statm = [-1, -1]  # (pid, descriptor) of /proc/self/statm, opened once per process


def _resident_bytes() -> int:
    """The process's resident memory, or -1 where /proc is not there. Read with one pread of
    a descriptor kept open (1.5 us; opening the file each time took 12 us, several times a
    first mask: every lazy build and compile reads it); reopened in a forked child, whose
    /proc/self is another file."""
    pid = os.getpid()
    try:
        if _statm[0] != pid:
            _statm[1] = os.open("/proc/self/statm", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            _statm[0] = pid
        return int(os.pread(_statm[1], 128, 0).split()[1]) * _PAGE
    except (OSError, ValueError, IndexError, AttributeError):
        return -1


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
    _PAGE = 4096


def active_limits() -> CompileLimits:
    """The limits of the compile running here (the defaults outside one)."""
    budget = _ACTIVE.get()
    return DEFAULT_LIMITS if budget is None else budget.limits


@contextmanager
def applied(limits: "CompileLimits | None"):
    """Run a compile under ``limits`` (None: the enclosing compile's, else the defaults)."""
    outer = _ACTIVE.get()
    if limits is None:
        if outer is not None:
            yield outer.limits
            return
        limits = DEFAULT_LIMITS
    elif not isinstance(limits, CompileLimits):
        raise TypeError(f"limits must be a gramalign.CompileLimits, not {type(limits).__name__}")
    now = work_clock()
    seconds = limits.max_compile_seconds
    deadline = math.inf if seconds is None else now + seconds
    if outer is not None and outer.deadline <= deadline:
        budget = _Budget(limits, outer.started, outer.deadline, outer.seconds, outer.resident_at_start)
    else:
        # (the first sample a check interval in: most compiles end before one; a read is ~25 µs)
        budget = _Budget(limits, now, deadline, seconds, _resident_bytes() - _JIT.resident, now + MEMORY_CHECK_SECONDS)
    token = _ACTIVE.set(budget)
    try:
        yield limits
    finally:
        _ACTIVE.reset(token)


def work_clock() -> float:
    """time.monotonic() (or the process's CPU time, see :func:`count_cpu_time`) without the time
    numba spent compiling kernels."""
    return _clock() - _JIT.seconds


def count_cpu_time() -> None:
    """Measure compile budgets in this process's CPU time from now on, instead of wall time.

    For processes that only compile (a server's admission workers, see
    gramalign.integrations.admission): there, waiting for a core (a lower priority, a machine
    busy decoding) is not work the input caused, and must not refuse a request. Call it before
    any compile runs."""
    global _clock
    _clock = time.process_time


def check_time(where: str = "") -> None:
    """Raise LimitExceeded once the running compile is past its deadline, or (sampled every
    ``MEMORY_CHECK_SECONDS``) once the process grew by more than ``max_memory_bytes``."""
    budget = _ACTIVE.get()
    if budget is None:
        return
    now = work_clock()
    if now > budget.deadline:
        raise LimitExceeded("max_compile_seconds", budget.seconds, f"{now - budget.started:.2f} s spent", where)
    if now >= budget.next_memory_check and budget.resident_at_start >= 0:
        budget.next_memory_check = now + MEMORY_CHECK_SECONDS
        grown = _resident_bytes() - _JIT.resident - budget.resident_at_start
        if grown > budget.limits.max_memory_bytes:
            raise LimitExceeded("max_memory_bytes", budget.limits.max_memory_bytes, grown, where,
                                "bytes the process grew by during the compile")


def check_estimate(seconds: float, where: str = "") -> None:
    """Raise LimitExceeded before a step that cannot be interrupted (a numba kernel) and is
    estimated to need ``seconds`` more than the running compile has left."""
    budget = _ACTIVE.get()
    if budget is not None and work_clock() + seconds > budget.deadline:
        raise LimitExceeded("max_compile_seconds", budget.seconds,
                            f"{work_clock() - budget.started:.2f} s spent and about {seconds:.2f} s more needed", where)


def check_size(limit: str, reached: int, where: str = "", detail: str = "") -> None:
    """Raise LimitExceeded when ``reached`` (an estimate made before the work) is above the
    active ``limit`` (a CompileLimits field name)."""
    value = getattr(active_limits(), limit)
    if reached > value:
        raise LimitExceeded(limit, value, reached, where, detail)
