"""The kernel decorator's copy propagation (gramalign.jit): the same results as the Python
code it compiles, and fewer reference counts than numba's own pipeline."""

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


def test_same_results_as_python():
    rng = np.random.default_rng(7)
    a, b, c = (rng.integers(0, 50, size=n).astype(np.int64) for n in (40, 40, 9))
    assert _walk_kernel(a, b, c) == _walk(a, b, c) == _walk_plain(a, b, c)
    values = rng.integers(0, 9, size=12).astype(np.int64)
    assert np.array_equal(_carried_kernel(values), _carried(values))
    assert _rebound_kernel(values) == _rebound(values)


def _increfs(dispatcher) -> int:
    (signature,) = dispatcher.signatures
    return dispatcher.inspect_llvm(signature).count("call void @NRT_incref(")


def test_inlined_arguments_are_not_reference_counted():
    a = np.arange(8, dtype=np.int64)
    _walk_kernel(a, a, a)
    _walk_plain(a, a, a)
    assert _increfs(_walk_kernel) < _increfs(_walk_plain)
