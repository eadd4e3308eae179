"""The kernel cache (gramalign.kernel_cache): a new process loads cached kernels without
compiling them, still links new kernels against them, and reads a cache built for a generic
CPU (the one a wheel ships) on this machine's own CPU, or ignores one that does not fit."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gramalign import kernel_cache
from gramalign.masking import kernel_cache_build

SRC = str(Path(kernel_cache.__file__).resolve().parents[1])

KERNELS = '''
import numpy as np
from gramalign.jit import kernel

@kernel
def bump(x):
    return x + 1.0

@kernel
def total(values):
    s = 0.0
    for i in range(values.shape[0]):
        s += bump(values[i])
    return s
'''
CALLER = '''
import numpy as np
from gramalign.jit import kernel
from cached_kernels import bump, total

@kernel(cache=False)
def twice(values):  # compiled here: links the cached bump
    s = 0.0
    for i in range(values.shape[0]):
        s += bump(bump(values[i]))
    return s

print(total(np.arange(4.0)), twice(np.arange(4.0)), sum(total._cache_hits.values()), sum(total._cache_misses.values()))
'''


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """A shipped cache of the regex workload, built for the generic CPU."""
    return kernel_cache_build.build(tmp_path_factory.mktemp("shipped"), workload="regex")


def _run(code: str, cwd: Path, **env) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(cwd), SRC]), **env))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_new_process_loads_cached_kernels_and_links_new_ones_against_them(shipped, tmp_path):
    (tmp_path / "cached_kernels.py").write_text(KERNELS)
    cache = str(tmp_path / "numba-cache")
    # (a shipped cache beside them, which holds no kernel of the user's own)
    first = _run(CALLER, tmp_path, NUMBA_CACHE_DIR=cache, GRAMALIGN_SHIPPED_KERNELS=str(shipped)).split()
    second = _run(CALLER, tmp_path, NUMBA_CACHE_DIR=cache, GRAMALIGN_SHIPPED_KERNELS=str(shipped)).split()
    # sum(x + 1) over 0..3 is 10; sum(x + 2) is 14
    assert first == ["10.0", "14.0", "0", "1"]
    assert second == ["10.0", "14.0", "1", "0"]


WALK = '''
import sys
import numpy as np
import numba
from gramalign.grammar.grammar import Grammar
from gramalign.masking import kernel_cache_build as build
from gramalign.masking.compiler import compile

vocabulary = build.walk_vocabulary()
compiled = compile(Grammar.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"), vocabulary)
build._walk(compiled, "2024-01-31")
matcher = compiled.matcher()
matcher.accept_string("2024-0")
bitmask = np.zeros((1, (vocabulary.size + 31) // 32), np.int32)
matcher.fill_next_token_bitmask(bitmask)
dispatchers = [d for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("gramalign.")
               for d in vars(m).values() if isinstance(d, numba.core.registry.CPUDispatcher)]
hits = sum(sum(d._cache_hits.values()) for d in dispatchers)
misses = sum(sum(d._cache_misses.values()) for d in dispatchers)
print(hits, misses, ",".join(map(str, bitmask[0].tolist())))
'''


def test_a_cache_built_for_the_generic_cpu_is_read_on_this_cpu(shipped, tmp_path):
    manifest = json.loads((shipped / kernel_cache.MANIFEST).read_text())
    assert manifest["target"][1] == "generic"
    hits, misses, mask = _run(WALK, tmp_path, GRAMALIGN_SHIPPED_KERNELS=str(shipped),
                              NUMBA_CACHE_DIR=str(tmp_path / "empty")).split()
    assert int(hits) >= 5 and int(misses) == 0  # nothing compiled: every kernel came from the shipped cache
    # the same mask as this process computes with kernels of its own (any cache)
    from gramalign.grammar.grammar import Grammar
    from gramalign.masking.compiler import compile

    vocabulary = kernel_cache_build.walk_vocabulary()
    matcher = compile(Grammar.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"), vocabulary).matcher()
    matcher.accept_string("2024-0")
    bitmask = np.zeros((1, (vocabulary.size + 31) // 32), np.int32)
    matcher.fill_next_token_bitmask(bitmask)
    assert mask == ",".join(map(str, bitmask[0].tolist()))


@pytest.mark.parametrize("change", ["numba", "triple", "damaged"])
def test_a_shipped_cache_that_does_not_fit_is_ignored(shipped, tmp_path, change):
    copy = tmp_path / "shipped"
    subprocess.run(["cp", "-r", str(shipped), str(copy)], check=True)
    manifest = json.loads((copy / kernel_cache.MANIFEST).read_text())
    if change == "numba":
        manifest["numba"] = "0.0.0"
    elif change == "triple":
        manifest["target"][0] = "riscv64-unknown-linux-gnu"
    else:  # every data file cut short
        for data in copy.rglob("*.nbc"):
            data.write_bytes(data.read_bytes()[:40])
    (copy / kernel_cache.MANIFEST).write_text(json.dumps(manifest))
    reference = _run(WALK, tmp_path, GRAMALIGN_SHIPPED_KERNELS=str(shipped),
                     NUMBA_CACHE_DIR=str(tmp_path / "empty-a")).split()
    hits, misses, mask = _run(WALK, tmp_path, GRAMALIGN_SHIPPED_KERNELS=str(copy),
                              NUMBA_CACHE_DIR=str(tmp_path / "empty-b")).split()
    assert int(misses) >= 5 and int(hits) == 0  # compiled, as without a shipped cache
    assert mask == reference[2]


RACE = """
import sys
from cached_kernels import bump, total
import numpy as np
print("ready", flush=True)
print(sys.argv[1], total(np.arange(4.0)), sum(total._cache_hits.values()), sum(total._cache_misses.values()),
      flush=True)
"""


def test_processes_sharing_a_cache_compile_a_kernel_once(tmp_path):
    """Two processes that miss the same kernel at once: one compiles it, the other waits on
    the kernel's lock and loads what the first saved (numba's own hit and miss counts)."""
    import fcntl
    import time

    (tmp_path / "cached_kernels.py").write_text(KERNELS)
    (tmp_path / "race.py").write_text(RACE)
    cache = tmp_path / "numba-cache"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), SRC]), NUMBA_CACHE_DIR=str(cache))
    where = _run("import os, cached_kernels as k; c = k.total._cache; "
                 "print(os.path.join(c._cache_path, c._impl.filename_base + 'lock'))", tmp_path,
                 NUMBA_CACHE_DIR=str(cache))
    lock_path = Path(where)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    held = os.open(lock_path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)  # as a process compiling `total` holds it
    racers = [subprocess.Popen([sys.executable, str(tmp_path / "race.py"), name], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in "ab"]
    for racer in racers:
        assert racer.stdout.readline().strip() == "ready", racer.stderr.read()[-3000:]
    time.sleep(2)
    assert all(racer.poll() is None for racer in racers)  # both wait for the lock
    os.close(held)
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=600)
        assert racer.returncode == 0, err[-3000:]
        results.append(out.split()[1:])
    assert sorted(results) == [["10.0", "0", "1"], ["10.0", "1", "0"]]  # one compiled, the other loaded
