"""Request constraints checked off the serving path: in worker processes, awaited, never blocking.

A server that builds each request's grammar where the request arrives (vLLM's
``validate_params``, on the API server's event loop) makes every other client wait while a
large schema compiles. :class:`Admission` instead parses the constraint in place (cheap: a
malformed one is refused at once) and builds the grammar and its parser tables in a pool of
worker processes, under a per-request :class:`~gramalign.CompileLimits`, while the caller
awaits it: the event loop serves everyone else, and no compile holds the server's GIL. A
constraint that does not build (or goes over its budget) is refused with gramalign's message;
one that builds is recorded as admitted in this process (so the engine front end does not
build it again) and, unless it built in milliseconds, its grammar and parser tables are saved
for the engine processes to load (:mod:`.built_grammars`); a quickly built JSON Schema is
built by the engine where its matchers go. Equal constraints arriving together share one build.

Two lanes keep a cheap constraint from queueing behind an expensive one: every new constraint
is first built by one worker with a short time budget (``quick_seconds``: real schemas build
in a few milliseconds); one that needs longer goes to the ``workers`` that have the full
budget. A malformed constraint is refused before any worker sees it.

The vLLM middleware that uses it is :mod:`gramalign.integrations.vllm_admission`; this module
imports neither vLLM nor torch.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process
import dataclasses
import logging
import multiprocessing
import os
import threading
import time
from typing import Any, Callable, Mapping

from ..errors import GramalignError, LimitExceeded
from ..grammar.limits import CompileLimits, applied, count_cpu_time
from .batch_rows import ConstraintError, RequestConstraint, admit, admitted, parse_request_constraint
from . import built_grammars

logger = logging.getLogger(__name__)

__all__ = ["Admission"]

WORKERS_VARIABLE = "GRAMALIGN_ADMISSION_WORKERS"
SECONDS_VARIABLE = "GRAMALIGN_ADMISSION_SECONDS"

QUICK_SOURCE_CHARS = 4096
"""Lark grammars longer than this skip the quick lane: lark's own loader, which no budget
interrupts, could hold its worker for seconds."""

ENGINE_BUILDS_SECONDS = 0.02
"""A JSON Schema whose whole grammar the admission builds in less than this is not saved: the
engine builds the parts its matchers reach, in their steps (a fraction of the whole, and
less than saving the parser tables, then loading them, costs). A slower one's grammar and
parser tables are saved, and the engine loads them: its steps never build a large schema."""

_WARM_UP = RequestConstraint("json_schema", '{"type":"object","properties":{"ok":{"type":"boolean"},'
                                            '"n":{"type":"integer","minimum":0}},"required":["ok"]}')
_BUILT, _REFUSED, _SLOW = "built", "refused", "slow"

FULL_LANE_NICENESS = 19
"""The full-budget workers run at a lower priority than the server: the builds that take long
(hostile schemas among them) use the cores the engine leaves idle instead of slowing its steps.
The lowest priority there is (it was 10). `benchmarks/serving_load.py` does not tell the two
apart beyond its noise: the first-seen schemas' time to first token p99 was 1.2 s in one run at
10, 0.33 s in one at 19 and 1.6-1.7 s in three more at 19, a tail of the schemas that take
seconds to build (docs/benchmarks.md). The quick lane keeps the server's priority, since a
request waits on each of its builds."""


class Admission:
    """Check request constraints in worker processes: one quick lane (``quick_seconds`` per
    build), ``workers`` with the full ``limits`` (at a lower priority, see
    :data:`FULL_LANE_NICENESS`). Time budgets count the workers' CPU time, so a build is not
    refused for waiting while the machine decodes.

    ``await admission.admit(extra_args)`` returns the request's constraint (None when it asks
    for none) or raises :class:`~gramalign.integrations.batch_rows.ConstraintError` with the
    reason. A build that outlives twice its time budget (front end, then parser tables) by
    ``grace`` seconds is stopped and its lane's workers replaced: a quick one goes on to the
    full lane, a full one is refused. (The budget leaves out numba compiling gramalign's kernels,
    which in a fresh environment can take a worker's first builds well past it; ``grace`` covers
    that, and a hang the budget's checks did not catch.) The builds that shared those workers are
    tried once more, and one that kills its worker twice is refused.

    >>> admission = Admission(workers=1)
    >>> asyncio.run(admission.admit({"gramalign": {"regex": "[0-9]+"}}))
    RequestConstraint(kind='regex', source='[0-9]+', options=())
    >>> admission.close()
    """

    def __init__(self, workers: int = 2, limits: "CompileLimits | None" = None, quick_seconds: float = 0.05,
                 grace: float = 60.0):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.limits = limits if limits is not None else CompileLimits()
        full = self.limits.max_compile_seconds
        self.quick_limits = dataclasses.replace(self.limits, max_compile_seconds=quick_seconds if full is None
                                                else min(quick_seconds, full))
        self.grace = grace
        self._quick = _Lane(1, on_start=self._warm_up)
        self._full = _Lane(workers, priority=FULL_LANE_NICENESS, on_start=self._warm_up)
        self._pending: "dict[RequestConstraint, asyncio.Future]" = {}

    @classmethod
    def from_environment(cls) -> "Admission":
        """Workers from ``GRAMALIGN_ADMISSION_WORKERS`` (default 2), each request's compile
        time budget from ``GRAMALIGN_ADMISSION_SECONDS`` (default: CompileLimits')."""
        workers, seconds = os.environ.get(WORKERS_VARIABLE) or "2", os.environ.get(SECONDS_VARIABLE)
        try:
            count = int(workers)
            limits = CompileLimits(max_compile_seconds=float(seconds)) if seconds else CompileLimits()
        except ValueError:
            raise GramalignError(f"{WORKERS_VARIABLE}={workers!r} must be a whole number of worker processes "
                                 f"and {SECONDS_VARIABLE}={seconds!r} a number of seconds") from None
        if count < 1 or (seconds and not limits.max_compile_seconds > 0):
            raise GramalignError(f"{WORKERS_VARIABLE}={workers!r} must be at least 1 and {SECONDS_VARIABLE}="
                                 f"{seconds!r} positive")
        return cls(workers=count, limits=limits)

    def start(self) -> None:
        """Start the workers now rather than at the first constrained request (each lane's
        workers, whenever started or replaced, first load gramalign and its compiled kernels)."""
        self._quick.pool()
        self._full.pool()

    def _warm_up(self, pool: concurrent.futures.ProcessPoolExecutor, workers: int) -> None:
        for _ in range(workers):
            pool.submit(_warm_up_worker, self.limits)

    async def admit(self, extra_args: "Mapping[str, Any] | None") -> "RequestConstraint | None":
        constraint = parse_request_constraint(extra_args)
        if constraint is None or admitted(constraint):
            return constraint
        pending = self._pending.get(constraint)
        if pending is None:
            pending = self._pending[constraint] = asyncio.ensure_future(self._check(constraint))
            pending.add_done_callback(lambda _, key=constraint: self._pending.pop(key, None))
        refusal = await asyncio.shield(pending)
        if refusal is not None:
            raise ConstraintError(refusal)
        admit(constraint)
        return constraint

    def close(self) -> None:
        """Stop the workers (pending builds are dropped)."""
        self._quick.stop(kill=False)
        self._full.stop(kill=False)

    async def _check(self, constraint: RequestConstraint) -> "str | None":
        if constraint.kind != "lark" or len(constraint.source) <= QUICK_SOURCE_CHARS:
            outcome, message = await self._run(self._quick, constraint, self.quick_limits, quick=True)
            if outcome != _SLOW:
                return message
        outcome, message = await self._run(self._full, constraint, self.limits, quick=False)
        return message

    async def _run(self, lane: "_Lane", constraint: RequestConstraint, limits: CompileLimits, quick: bool,
                   retry: bool = True) -> "tuple[str, str | None]":
        seconds = limits.max_compile_seconds
        deadline = None if seconds is None else 2 * seconds + self.grace  # front end, then tables
        pool = lane.pool()
        try:
            return await asyncio.wait_for(asyncio.wrap_future(pool.submit(_build, constraint, limits, quick)), deadline)
        except asyncio.TimeoutError:
            if quick:  # numba compiling a kernel in a fresh worker, or a hang: the full lane decides
                logger.warning("gramalign: a quick build ran past %.1f s; restarting the quick worker", deadline)
                lane.stop(kill=True, pool=pool)
                return _SLOW, None
            reason = f"did not compile within {deadline:.1f} s"
        except concurrent.futures.process.BrokenProcessPool:
            # Every build in a pool breaks with the one that killed a worker (or ran past its
            # deadline): each is tried once more on fresh workers, where only the culprit fails again.
            lane.stop(kill=True, pool=pool)
            if retry:
                return await self._run(lane, constraint, limits, quick, retry=False)
            reason = "killed its worker process (out of memory?)"
        logger.error("gramalign: the request's %s %s; restarting those admission workers", constraint.kind, reason)
        lane.stop(kill=True, pool=pool)
        return _REFUSED, f"gramalign could not compile the request's {constraint.kind}: it {reason}"


class _Lane:
    """A pool of worker processes, started on first use and replaced after a failure, their
    scheduling priority lowered by ``priority`` (Unix niceness)."""

    def __init__(self, workers: int, priority: int = 0,
                 on_start: "Callable[[concurrent.futures.ProcessPoolExecutor, int], None] | None" = None):
        self.workers = workers
        self.priority = priority
        self.on_start = on_start  # given each new pool (and the worker count) as it starts
        self._pool: "concurrent.futures.ProcessPoolExecutor | None" = None
        self._lock = threading.Lock()

    def pool(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # spawn: the server has threads and an event loop, which a fork would copy mid-flight
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                    initargs=(self.priority,))
                if self.on_start is not None:
                    self.on_start(self._pool, self.workers)
            return self._pool

    def stop(self, kill: bool, pool: "concurrent.futures.ProcessPoolExecutor | None" = None) -> None:
        """Stop the workers (only if they are still ``pool``, when given: another caller may have
        replaced them already)."""
        with self._lock:
            if pool is not None and self._pool is not pool:
                return
            pool, self._pool = self._pool, None
        if pool is None:
            return
        if kill:  # a hung build stops no other way
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)


def _start_worker(niceness: int) -> None:
    # Budgets in CPU time: a build waiting for a core (this lower priority, an engine busy
    # decoding) is not refused for the wait.
    count_cpu_time()
    if niceness and hasattr(os, "nice"):
        try:
            os.nice(niceness)
        except OSError:
            pass


def _warm_up_worker(limits: CompileLimits) -> None:
    """Load, in a new worker, the kernels its builds use (parser tables included, which a
    quickly built schema skips)."""
    from ..grammar.parser_tables import build_parser_tables

    with applied(limits):
        build_parser_tables(_WARM_UP._build())


def _build(constraint: RequestConstraint, limits: CompileLimits, quick: bool = False) -> "tuple[str, str | None]":
    """In a worker: build the grammar and parser tables of ``constraint`` under ``limits`` and
    save them for the engines (a quickly built JSON Schema's grammar is checked, not saved:
    see :data:`ENGINE_BUILDS_SECONDS`). Returns (outcome, refusal message or None); the outcome is
    "slow" when a ``quick`` build ran out of time."""
    from ..grammar.parser_tables import build_parser_tables

    started = time.perf_counter()
    try:
        with applied(limits):
            grammar = constraint._build()
        if constraint.kind == "json_schema" and time.perf_counter() - started < ENGINE_BUILDS_SECONDS:
            return _BUILT, None  # checked; the engine builds what its matchers reach (nothing saved)
        tables = None
        if grammar.single_terminal() is None:
            with applied(limits):
                tables = build_parser_tables(grammar)
    except GramalignError as error:
        cause = error.__cause__ if isinstance(error, ConstraintError) and error.__cause__ is not None else error
        if quick and isinstance(cause, LimitExceeded) and cause.limit == "max_compile_seconds":
            return _SLOW, None  # the quick lane's budget, not the request's
        if isinstance(error, ConstraintError):
            return _REFUSED, str(error)
        return _REFUSED, f"gramalign could not compile the request's {constraint.kind}: {type(error).__name__}: {error}"
    built_grammars.save(constraint, grammar, tables)
    logger.debug("gramalign: admitted a %s in %.3f s", constraint.kind, time.perf_counter() - started)
    return _BUILT, None
