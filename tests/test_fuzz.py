"""A short fuzz run (fixed seed): hostile and random schemas, Lark grammars and regexes, each
compiled in a child process under a 2 s compile budget and 1 GiB of memory, then checked by
random mask walks and near-miss texts against jsonschema, lark and ``re`` (see
tests/support/fuzz_run.py). ``benchmarks/fuzz.py`` runs the same cases at scale (docs/benchmarks.md).
"""

from __future__ import annotations

import multiprocessing

import pytest

from support.fuzz_cases import make_case
from support.fuzz_run import FAILURES, run_cases, summarize, warm_up

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="each case runs in a forked process")

SEED = 24
CASES = 80


@pytest.mark.slow
def test_short_fuzz_run_has_no_failures():
    warm_up()
    results = run_cases([make_case(SEED, i) for i in range(CASES)], budget=2.0, timeout=30.0, memory_mib=1024)
    counts = summarize(results)
    failures = [(case.describe(), report) for case, report in results if report["outcome"] in FAILURES]
    assert not failures, f"{counts}\n" + "\n".join(f"{d}\n  {r.get('detail', '')[:800]}" for d, r in failures)
    # not vacuous: most cases compile and are checked, the hostile ones are refused clearly
    assert len(results) == CASES
    assert counts["result"] >= CASES // 3, counts
    assert counts["clear error"] >= CASES // 10, counts
    checked = sum(report.get("samples", 0) + report.get("walks", 0) for _, report in results)
    assert checked >= 10 * counts["result"], (checked, counts)
