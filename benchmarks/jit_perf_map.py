"""Name numba's compiled kernels for ``perf``: write ``/tmp/perf-<pid>.map`` from the symbols
numba's JIT engine defined, so that ``perf report`` shows kernels by name instead of bare
addresses (kernels loaded from the disk cache included).

Call :func:`write_perf_map` in the process being profiled once the kernels of interest have
run (``perf report`` reads the map when it reports, so the end of the process will do), and
profile with ``perf record -e cpu-clock -p <pid>`` from another shell. Inlined helpers are
part of their caller; ``NRT_incref``/``NRT_decref`` show numba's reference counting, which a
kernel's loop pays where it reassigns an array (docs/benchmarks.md, "No reference counts in
the construction").
"""

from __future__ import annotations

import os
import re


def write_perf_map(path: "str | None" = None) -> int:
    """Write the map (default ``/tmp/perf-<pid>.map``); returns the number of symbols named.
    A symbol's size is taken as the distance to the next one."""
    from numba.core.registry import cpu_target

    engine = cpu_target.target_context.codegen()._engine
    named = {}
    for symbol in list(engine._defined_symbols):
        address = engine._ee.get_function_address(symbol)
        if address:
            match = re.search(r"_ZN(?:\d+\w+?)*?(\d+)([A-Za-z_]\w*?)B\d+v\d+", symbol)
            named[address] = match.group(2) if match and not symbol.startswith("NRT") else symbol
    rows = sorted(named.items())
    with open(path or f"/tmp/perf-{os.getpid()}.map", "w") as out:
        for (address, name), (after, _) in zip(rows, rows[1:] + [(rows[-1][0] + 4096, "")] if rows else []):
            out.write(f"{address:x} {min(after - address, 1 << 20):x} {name}\n")
    return len(rows)
