"""The kernel decorator (gramalign.jit): its copy propagation and borrowed arguments give the
results of the Python code they compile, keep what a kernel returns alive, and leave fewer
reference counts than numba's own pipeline."""

import gc
import sys

import numba
import numpy as np

from gramalign.jit import kernel


@kernel(inline="always")
def _pick(a, b, c, i, flag):
    # branchy, so LLVM's pruning cannot remove the reference counts of the parameters
    if flag > 0:
        if a[i] > b[i]:
            return a[i] + c[i % c.shape[0]]
        return b[i]
    x = 0
    for k in range(c.shape[0]):
        if c[k] == i:
            x += a[k % a.shape[0]]
    return x


def _walk(a, b, c):
    total = 0
    for i in range(a.shape[0]):
        total += _pick(a, b, c, i, i % 3)
    return total


# not cached: numba cannot show the IR of a kernel loaded from its cache
_walk_kernel = kernel(_walk, cache=False)
_walk_plain = numba.njit(_walk)


@kernel(inline="always")
def _bump(counter, step):
    counter = counter + step  # a parameter assigned again: not a copy of the argument
    return counter


def _carried(values):
    # ``previous`` is read before it is assigned in each round: a copy that does not
    # dominate its uses must stay a copy
    previous = -1
    out = np.empty_like(values)
    for i in range(values.shape[0]):
        current = values[i]
        out[i] = previous
        previous = current
        previous = _bump(previous, 1)
    return out


_carried_kernel = kernel(_carried)


def _rebound(values):
    # the source of a copy assigned again after the copy
    x = values[0]
    y = x
    x = values[1]
    return y * 10 + x


_rebound_kernel = kernel(_rebound)


def _previous(values):
    # ``kept`` is copied (into ``before``) in the round after its copy of ``current`` was
    # made: the copy must read the earlier round's value, not ``current``'s new one
    out = np.zeros_like(values)
    for i in range(values.shape[0]):
        current = values[i] * 1
        if i % 2 == 0:
            kept = current
        else:
            before = kept
            out[i] = before
    return out


_previous_kernel = kernel(_previous)


def test_same_results_as_python():
    rng = np.random.default_rng(7)
    a, b, c = (rng.integers(0, 50, size=n).astype(np.int64) for n in (40, 40, 9))
    assert _walk_kernel(a, b, c) == _walk(a, b, c) == _walk_plain(a, b, c)
    values = rng.integers(0, 9, size=12).astype(np.int64)
    assert np.array_equal(_carried_kernel(values), _carried(values))
    assert _rebound_kernel(values) == _rebound(values)
    assert np.array_equal(_previous_kernel(values), _previous(values))


def _increfs(dispatcher) -> int:
    (signature,) = dispatcher.signatures
    return dispatcher.inspect_llvm(signature).count("call void @NRT_incref(")


def test_inlined_arguments_are_not_reference_counted():
    a = np.arange(8, dtype=np.int64)
    _walk_kernel(a, a, a)
    _walk_plain(a, a, a)
    assert _increfs(_walk_kernel) < _increfs(_walk_plain)


@kernel
def _add_at(a, b, i):
    # a real call (not inlined): its array arguments are borrowed from the caller
    if a[i] > 3:
        return a[i] + b[i]
    return b[0]


def _calls(a, b):
    total = 0
    for i in range(a.shape[0]):
        total += _add_at(a, b, i)
    return total


_calls_kernel = kernel(_calls, cache=False)


@kernel
def _same(a):
    return a


@kernel
def _in_tuple(a, b):
    return (a, b[1:])


@kernel
def _shifted(a):
    a = a[1:]  # the parameter bound again: the new view holds its own reference
    return a


@kernel
def _keep_and_drop(a):
    kept = _same(a)
    return _in_tuple(kept, a)[1]


def test_borrowed_arguments_give_python_results():
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 9, size=30), rng.integers(0, 9, size=30)
    assert _calls_kernel(a, b) == _calls(a, b)


def test_what_a_kernel_returns_outlives_its_arguments():
    import gc

    returned = _same(np.arange(5))
    first, rest = _in_tuple(np.arange(3), np.arange(10, 14))
    shifted = _shifted(np.arange(4))
    tail = _keep_and_drop(np.arange(6))
    gc.collect()
    np.arange(100)  # reuse freed memory if something was freed too early
    assert returned.tolist() == [0, 1, 2, 3, 4]
    assert first.tolist() == [0, 1, 2] and rest.tolist() == [11, 12, 13]
    assert shifted.tolist() == [1, 2, 3]
    assert tail.tolist() == [1, 2, 3, 4, 5]


def _grown(row, n):
    out = np.empty(n, row.dtype)  # may raise: paths LLVM's pruning does not see through
    out[:row.shape[0]] = row
    return out


_grown_kernel = kernel(_grown)


def _branches(m, b, c):
    total = 0
    for i in range(m.shape[0]):
        if b[i] > 2:
            total += _grown_kernel(m[i], 6)[0]
        elif c[i] > 1:
            total += _grown_kernel(c, 9)[1]
        else:
            total -= b[i]
    return total


def test_a_kernel_does_not_count_its_own_arguments():
    m, b = np.arange(20).reshape(5, 4), np.arange(5)
    c = b[::-1].copy()
    fresh = kernel(_branches, cache=False)  # numba shows no IR of a cached kernel
    plain = numba.njit(_branches)
    assert fresh(m, b, c) == plain(m, b, c) == _branches(m, b, c)
    assert _increfs(fresh) < _increfs(plain)


@kernel(inline="always")
def _clamp_sum(values, low, high):
    total = 0
    for v in values:
        if v < low:
            total += low
        elif v > high:
            total += high
        else:
            total += v
    return total


@kernel(inline="always")
def _two_clamps(values, split):
    # the same helper inlined twice here, and this helper inlined twice below: each copy of
    # its IR must stay its own (one memo per inlined call, not one per process)
    return _clamp_sum(values[:split], 0, 5) * 100 + _clamp_sum(values[split:], 2, 3)


def _nested(values):
    return _two_clamps(values, 2) * 10_000 + _two_clamps(values, values.shape[0] - 1)


def test_inlining_with_one_memo_per_call_gives_python_results():
    """numba's inliner copies a helper's IR with one memo per inlined call (jit._InlinerCopy),
    installed for every compile in the process; helpers inlined at several sites, nested,
    still compute what the Python code computes."""
    from numba.core import inline_closurecall

    from gramalign import jit

    assert inline_closurecall.copy is jit._INLINER_COPY
    compiled = kernel(_nested, cache=False)
    rng = np.random.default_rng(7)
    for n in range(3, 12):
        values = rng.integers(-4, 10, n)
        clamp = _clamp_sum.py_func  # the Python code itself

        def two(split):
            return clamp(values[:split], 0, 5) * 100 + clamp(values[split:], 2, 3)

        assert compiled(values) == two(2) * 10_000 + two(n - 1)


@kernel(inline="always")
def _pick_from(bundle, i, flag):
    a, b, c = bundle  # the members of a borrowed bundle: borrowed too
    if flag > 0:
        if a[i] > b[i]:
            return a[i] + c[i % c.shape[0]]
        return bundle[1][i]
    x = 0
    for k in range(c.shape[0]):
        if c[k] == i:
            x += a[k % a.shape[0]]
    return x


def _walk_bundle(bundle):
    total = 0
    for i in range(bundle[0].shape[0]):
        total += _pick_from(bundle, i, i % 3)
    return total


def _walk_built(a, b, c):
    return _walk_bundle_kernel((a, b, c))  # a bundle of borrowed arrays is borrowed too


_walk_bundle_kernel = kernel(_walk_bundle, cache=False)
_walk_built_kernel = kernel(_walk_built, cache=False)


def test_bundle_members_are_borrowed_like_arguments():
    rng = np.random.default_rng(5)
    a, b, c = rng.integers(0, 9, size=40), rng.integers(0, 9, size=40), rng.integers(0, 40, size=7)
    before = [sys.getrefcount(x) for x in (a, b, c)]
    for _ in range(3):
        assert _walk_bundle_kernel((a, b, c)) == _walk_built_kernel(a, b, c) == _walk(a, b, c)
    assert [sys.getrefcount(x) for x in (a, b, c)] == before  # nothing leaked, nothing freed early
    assert _increfs(_walk_bundle_kernel) == 0 and _increfs(_walk_built_kernel) == 0
    plain = numba.njit(_walk_bundle)
    assert plain((a, b, c)) == _walk(a, b, c)
    assert _increfs(plain) > 0  # (numba's own pipeline counts them)


def _rebind_in_loop(bundle, n):
    total = 0
    for i in range(n):
        picked = bundle[i % 2]  # assigned once, run n times: holds no reference
        if i % 3 == 0:
            picked = picked[1:]  # a view of its own: not borrowed, counted as usual
        total += picked[0]
    return total


def _swap_in_loop(bundle, n):
    total = 0
    first, second = bundle
    for _ in range(n):
        first, second = second, first  # assigned twice: counted as usual
        total += first[0] - second[0]
    return total


def test_bundle_members_bound_again_give_python_results():
    a, b = np.arange(10, 20), np.arange(30, 40)
    before = [sys.getrefcount(x) for x in (a, b)]
    for python in (_rebind_in_loop, _swap_in_loop):
        compiled = kernel(python, cache=False)
        for n in (0, 1, 7, 50):
            assert compiled((a, b), n) == python((a, b), n)
    gc.collect()
    np.arange(1000)  # reuse freed memory if something was freed too early
    assert [sys.getrefcount(x) for x in (a, b)] == before
    assert a.tolist() == list(range(10, 20)) and b.tolist() == list(range(30, 40))
