"""Where compiled kernels are kept: numba's per-function disk cache, loaded lazily, and a
read-only cache that can ship inside the package.

numba loads a cached kernel by parsing the LLVM bitcode of everything linked into it and
scanning every symbol of that module, though a process that only calls the kernel needs
neither: both are for linking the kernel into another one compiled later. That was 0.38 s of
the 0.49 s that a new process spent loading the 39 kernels of the demo schema's first compile
(docs/benchmarks.md, "The first call, with the kernel cache"). :class:`KernelCache` keeps the bitcode and parses it
only when a later compile links against it, and registers the symbols it recorded when the
kernel was saved.

It also reads a second location, ``gramalign/_kernel_cache``: kernels compiled for a
generic CPU of the machine's architecture by :mod:`gramalign.masking.kernel_cache_build`
(when a wheel is built: setup.py), so that a fresh environment compiles nothing it ships. Its
``manifest.json`` records the numba version and the code generator's target; where either
differs from this process's, or the shipped cache is missing, it is not read, and kernels
compile (and are cached) as before. numba 0.68 stamps a source file by a hash of its
contents, so an install's file times do not matter; a changed source file misses, as it
should.

Processes that share a cache compile each kernel once between them: a process about to
compile a kernel missing from the cache takes a file lock beside its index first (waiting
while another process compiles it, then loading what that one saved). Workers of a server
started together on an empty cache, or ``gramalign warm-up`` beside a program that loads
its model, then split the compiling instead of each doing all of it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
from pathlib import Path

try:
    import fcntl
except ImportError:  # (Windows: every process compiles what it misses, as numba does)
    fcntl = None

import llvmlite.binding as llvm
import numba
from numba.core import compiler, sigutils
from numba.core import event as numba_event
from numba.core.caching import (CompileResultCacheImpl, FunctionCache, IndexDataCacheFile,
                                UserProvidedCacheLocator)
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler_lock import global_compiler_lock

SHIPPED = Path(os.environ.get("GRAMALIGN_SHIPPED_KERNELS") or Path(__file__).with_name("_kernel_cache"))
"""The shipped cache's folder (absent unless built); ``GRAMALIGN_SHIPPED_KERNELS`` names
another (to build or test one elsewhere)."""
MANIFEST = "manifest.json"
BUILD_ENV = "GRAMALIGN_KERNEL_CACHE_BUILD"
"""Set (to any value) in the process that builds the shipped cache: kernels are saved there."""
_FORMAT = "gramalign-lazy-1"
"""In every index key: entries of numba's own format (another payload) are never read."""
_PACKAGE = Path(__file__).resolve().parent


class _LazyLibrary(JITCodeLibrary):
    """A kernel's code loaded from the cache whose linkable module is parsed on first use."""

    _lazy_bitcode = None

    def _get_module_for_linking(self):
        if self._shared_module is None and self._lazy_bitcode is not None:
            self._shared_module = llvm.parse_bitcode(self._lazy_bitcode)
            self._lazy_bitcode = None
        return super()._get_module_for_linking()


def _unserialize(codegen, serialized, symbols):
    """numba's ``JITCodeLibrary._unserialize`` for object code, less the bitcode parse and
    the symbol scan (``symbols`` were recorded when the kernel was saved)."""
    name, kind, data = serialized
    if kind != "object":
        return JITCodeLibrary._unserialize(codegen, serialized)
    object_code, shared_bitcode = data
    library = codegen.create_library(name)
    library.__class__ = _LazyLibrary
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library._lazy_bitcode = shared_bitcode
    library._finalize_final_module()
    codegen._engine._defined_symbols.update(symbols)
    return library


def _defined_symbols(library) -> frozenset:
    module = library._final_module
    return frozenset(value.name for values in (module.functions, module.global_variables) for value in values
                     if not value.is_declaration)


class _LazyImpl(CompileResultCacheImpl):
    def reduce(self, cres):
        return _defined_symbols(cres.library), cres._reduce()

    def rebuild(self, target_context, payload):
        symbols, reduced = payload
        codegen = target_context.codegen()
        # (numba compiles and loads under its global compiler lock: nothing else unserializes
        # with this codegen meanwhile)
        previous = vars(codegen).get("unserialize_library")
        codegen.unserialize_library = functools.partial(_unserialize, codegen, symbols=symbols)
        try:
            return compiler.CompileResult._rebuild(target_context, *reduced)
        finally:
            if previous is None:
                del codegen.unserialize_library
            else:
                codegen.unserialize_library = previous


class _ShippedLocator(UserProvidedCacheLocator):
    """The shipped cache: one folder per package folder, as numba's own layout beside a
    source file."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = str(SHIPPED.joinpath(*Path(py_file).resolve().relative_to(_PACKAGE).parent.parts))

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(_PACKAGE):
            return None  # (a kernel of the user's own: nothing shipped)
        return cls(py_func, py_file)


class _ShippedImpl(_LazyImpl):
    _locator_classes = [_ShippedLocator]


@functools.cache
def _shipped_target() -> "tuple | None":
    """The code generator target the shipped cache was built for, or None where it cannot
    be read here (missing, another numba, another architecture)."""
    try:
        manifest = json.loads((SHIPPED / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    target = tuple(manifest.get("target", ()))
    if (manifest.get("numba") != numba.__version__ or manifest.get("python") != list(sys.version_info[:2])
            or len(target) != 3):
        return None
    from numba.core.registry import cpu_target

    host = cpu_target.target_context.codegen().magic_tuple()
    return target if target[0] == host[0] else None  # (same triple: generic code runs)


class KernelCache(FunctionCache):
    """numba's ``FunctionCache`` with lazy loads, falling back on the shipped cache."""

    _impl_class = _LazyImpl

    def __init__(self, py_func):
        self._building = bool(os.environ.get(BUILD_ENV))  # (then the shipped cache is the cache)
        if self._building:
            self._impl_class = _ShippedImpl
        super().__init__(py_func)
        self._shipped = None

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + (_FORMAT,)

    def _load_overload(self, sig, target_context):
        found = super()._load_overload(sig, target_context)
        if found is not None or not self._enabled or self._building:
            return found
        target = _shipped_target()
        if target is None:
            return None
        if self._shipped is None:
            self._shipped = self._open_shipped()
        if not self._shipped:
            return None
        impl, index = self._shipped
        sig_key, _, code_key, fmt = self._index_key(sig, target_context.codegen())
        try:
            data = index.load((sig_key, target, code_key, fmt))
            return None if data is None else impl.rebuild(target_context, data)
        except Exception:  # (a damaged shipped file: compile instead, as without one)
            return None

    def _open_shipped(self):
        """``(impl, index file)`` of this kernel in the shipped cache, or False where it has
        none (not a gramalign kernel)."""
        try:
            impl = _ShippedImpl(self._py_func)
        except RuntimeError:  # (numba: no locator)
            return False
        return impl, IndexDataCacheFile(impl.locator.get_cache_path(), impl.filename_base,
                                        impl.locator.get_source_stamp())


def cached(dispatcher):
    """Give a numba dispatcher (compiled without ``cache=True``) a :class:`KernelCache`, and
    compile a kernel missing from it under a lock that other processes see."""
    dispatcher._cache = KernelCache(dispatcher.py_func)
    compile_here = dispatcher.compile

    def compile(sig):
        with global_compiler_lock:  # (numba's own, re-entrant: taken first, as numba does)
            args, _ = sigutils.normalize_signature(sig)
            if tuple(args) in dispatcher.overloads:
                return compile_here(sig)
            with _compiling(dispatcher._cache):
                return compile_here(sig)

    dispatcher.compile = compile
    return dispatcher


_HELD = threading.local()
WAIT_EVENT = "gramalign:kernel_lock_wait"
"""numba event kind around a wait for another process's compile: compile budgets count it
as kernel compile time (:mod:`gramalign.grammar.limits`), not as their own work."""


@contextlib.contextmanager
def _compiling(cache: KernelCache):
    """Hold the file lock of ``cache``'s kernel (all its specializations) while this process
    loads or compiles one; re-entrant, as a compile can call for another specialization."""
    path = None
    if fcntl is not None and not cache._building:
        path = os.path.join(cache._cache_path, cache._impl.filename_base + "lock")
    held = vars(_HELD).setdefault("paths", set())
    if path is None or path in held:
        yield
        return
    try:
        os.makedirs(cache._cache_path, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # (a read-only cache: numba does not save there either)
        yield
        return
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with numba_event.trigger_event(WAIT_EVENT):
                fcntl.flock(descriptor, fcntl.LOCK_EX)
        held.add(path)
        try:
            yield
        finally:
            held.discard(path)
    finally:
        os.close(descriptor)  # (releases the lock)
