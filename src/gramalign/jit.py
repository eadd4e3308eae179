"""How gramalign compiles its numba kernels: one decorator, ``@kernel``, and two changes to
numba's pipeline that keep reference counts out of the kernels' hot paths.

numba counts references to every array a variable holds, with an atomic add in a call LLVM
cannot see into, and its pass that prunes the pairs gives up across branches. Two sources
were half the exact trie walk's time (docs/benchmarks.md, "Reference counts out of the
kernels"):

- a helper declared ``inline="always"`` gets each parameter bound to the caller's argument
  (``param = arg``), one incref on entry and one decref where the parameter dies, per
  array; :class:`PropagateCopies` replaces such bindings by the argument itself where that
  is provably the same value;
- a kernel called from another kernel (or from Python) increfs each array argument on entry
  and decrefs it on exit, though its caller holds a reference for the whole call;
  :class:`BorrowingLower` drops that pair, and those of the members of a tuple argument
  (kernels pass their arrays in named bundles: ``lexer``, ``lr``, ``glue``, ``pool``).

A third change is to numba's inliner, for compile time alone: see :class:`_InlinerCopy`.
"""

from __future__ import annotations

import collections
import copy

import numba
from numba.core import inline_closurecall, ir, lowering, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.ir_utils import build_definitions, replace_vars
from numba.core.typed_passes import NativeLowering
from numba.core.untyped_passes import InlineInlinables

from .kernel_cache import cached


@register_pass(mutates_CFG=False, analysis_only=False)
class PropagateCopies(FunctionPass):
    """Replace ``x = y`` (both variables) by ``y`` in the uses of ``x`` when ``x`` and ``y``
    are each assigned once, the assignment of ``y`` dominates the copy and the copy dominates
    every use of ``x`` (so ``y`` cannot have changed in between)."""

    _name = "gramalign_propagate_copies"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        func_ir = state.func_ir
        blocks = func_ir.blocks
        defined = {}
        uses = {}
        for label, block in blocks.items():
            for index, stmt in enumerate(block.body):
                target = stmt.target if isinstance(stmt, ir.Assign) else None
                if target is not None:
                    defined.setdefault(target.name, []).append((label, index, stmt))
                for var in stmt.list_vars():
                    if var is not target:  # (a copy into another variable is a use too)
                        uses.setdefault(var.name, []).append((label, index))
        dominators = compute_cfg_from_blocks(blocks).dominators()
        args = set(func_ir.arg_names)
        replaced = {}
        for name, definitions in defined.items():
            if len(definitions) != 1 or name in args:
                continue
            label, index, stmt = definitions[0]
            source = stmt.value
            if not isinstance(source, ir.Var) or len(defined.get(source.name, ())) != 1:
                continue
            source_label, source_index, _ = defined[source.name][0]
            if not _dominates(dominators, source_label, source_index, label, index):
                continue  # (numba's bytecode order already rules this out)
            if all(_dominates(dominators, label, index, use_label, use_index)
                   for use_label, use_index in uses.get(name, ())):
                replaced[name] = (stmt, source)
        if not replaced:
            return False
        copies = {id(stmt) for stmt, _ in replaced.values()}
        for block in blocks.values():
            block.body = [stmt for stmt in block.body if id(stmt) not in copies]
        replace_vars(blocks, {name: source for name, (_, source) in replaced.items()})
        func_ir._definitions = build_definitions(blocks)
        return True


def _dominates(dominators, label, index, other_label, other_index) -> bool:
    """Does statement ``index`` of block ``label`` run before statement ``other_index`` of
    block ``other_label`` on every path to the latter?"""
    if label == other_label:
        return index < other_index
    return label in dominators[other_label]


class BorrowingLower(lowering.Lower):
    """numba's lowering, with the function's arguments borrowed: the caller holds a
    reference to each for the whole call, so the parameter's own incref on entry and decref
    where it dies are dropped (a parameter assigned once, from its argument, of the
    argument's type; what it is copied, stored or returned into still takes a reference).

    A bundle (a tuple of arrays) passed as an argument lends its members the same way: a
    variable assigned once from a borrowed tuple's member (``trans, accept = lexer``,
    ``lexer[0]``), or copied once from a borrowed variable, is borrowed too, since the tuple
    holds its members for as long as the caller holds the tuple; and so is a tuple built of
    borrowed variables alone. A borrowed variable never holds a reference, even where a loop
    assigns it again. Without this, each member an inlined helper unpacks costs an atomic
    incref and decref per call of the helper: 15x the time of a small helper's step in a
    loop (docs/benchmarks.md, "Kernel arguments in bundles")."""

    def pre_lower(self):
        super().pre_lower()
        assigned = collections.Counter()
        sources = {}
        for block in self.func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    assigned[stmt.target.name] += 1
                    sources[stmt.target.name] = stmt.value
        borrowed = set()
        if not self.generator_info:
            changed = True
            while changed:
                changed = False
                for name, value in sources.items():
                    if name not in borrowed and assigned[name] == 1 and self._lends(name, value, borrowed):
                        borrowed.add(name)
                        changed = True
        self._borrowed = borrowed
        self._borrowing = False

    def _lends(self, name, value, borrowed) -> bool:
        """Is ``name = value`` a variable that may borrow its value (see the class)?"""
        if isinstance(value, ir.Arg):
            return self.typeof("arg." + value.name) == self.typeof(name)
        if isinstance(value, ir.Var):
            return value.name in borrowed and self.typeof(value.name) == self.typeof(name)
        if not isinstance(value, ir.Expr):
            return False
        if value.op == "build_tuple":
            bundle = self.typeof(name)
            return all(item.name in borrowed and self.typeof(item.name) == bundle[index]
                       for index, item in enumerate(value.items))
        if value.op not in ("exhaust_iter", "static_getitem"):
            return False
        if value.value.name not in borrowed:
            return False
        bundle = self.typeof(value.value.name)
        if not isinstance(bundle, types.BaseTuple):
            return False
        if value.op == "exhaust_iter":
            return bundle == self.typeof(name)
        index = value.index
        return (isinstance(index, int) and 0 <= index < len(bundle)
                and bundle[index] == self.typeof(name))

    def lower_assign(self, ty, inst):
        value = inst.value
        if inst.target.name in self._borrowed:
            if isinstance(value, ir.Arg) or (isinstance(value, ir.Expr) and value.op == "build_tuple"):
                self._borrowing = True
                try:
                    return super().lower_assign(ty, inst)
                finally:
                    self._borrowing = False
            held = self.loadvar(value.name if isinstance(value, ir.Var) else value.value.name)
            if isinstance(value, ir.Expr) and value.op == "static_getitem":
                return self.builder.extract_value(held, value.index)
            return held
        return super().lower_assign(ty, inst)

    def storevar(self, value, name, argidx=None):
        # (a borrowed variable assigned in a loop holds no reference to the value it had)
        if name in self._borrowed:
            self._borrowing = True
            try:
                return super().storevar(value, name, argidx)
            finally:
                self._borrowing = False
        return super().storevar(value, name, argidx)

    def delvar(self, name):
        if name in self._borrowed:
            self._borrowing = True
            try:
                return super().delvar(name)
            finally:
                self._borrowing = False
        return super().delvar(name)

    def incref(self, typ, val):
        if not self._borrowing:
            super().incref(typ, val)

    def decref(self, typ, val):
        if not self._borrowing:
            super().decref(typ, val)


@register_pass(mutates_CFG=True, analysis_only=False)
class BorrowingNativeLowering(NativeLowering):
    """numba's native lowering through :class:`BorrowingLower`."""

    _name = "gramalign_borrowing_native_lowering"

    @property
    def lowering_class(self):
        return BorrowingLower


class _InlinerCopy:
    """The ``copy`` module as numba's inliner sees it: one memo for all the blocks it copies
    while inlining one call.

    Inlining a helper copies the helper's IR block by block, each with ``copy.deepcopy`` and a
    memo of its own, and every variable refers to the function's scope, which lists every
    variable: each block copies them all again. Copying a kernel of a few hundred blocks
    inlined several levels deep cost half of a fresh process's compile time (docs/benchmarks.md,
    "Compile time: numba's inliner"). With one memo per inlined call the blocks share one
    copy of the scope, as the blocks they copy do; the IR that comes out is the same.
    """

    def __init__(self):
        self.memo = None

    def deepcopy(self, value, memo=None):
        return copy.deepcopy(value, self.memo if memo is None else memo)

    def __getattr__(self, name):
        return getattr(copy, name)


def _inline_with_one_memo(inline_ir):
    def inline(self, *args, **kwargs):
        outer, _INLINER_COPY.memo = _INLINER_COPY.memo, {}
        try:
            return inline_ir(self, *args, **kwargs)
        finally:
            _INLINER_COPY.memo = outer

    inline.__wrapped__ = inline_ir
    return inline


_INLINER_COPY = _InlinerCopy()
if inline_closurecall.copy is copy:  # (once per process: modules are imported once)
    inline_closurecall.copy = _INLINER_COPY
    inline_closurecall.InlineWorker.inline_ir = _inline_with_one_memo(inline_closurecall.InlineWorker.inline_ir)


class KernelCompiler(CompilerBase):
    """numba's nopython pipeline with :class:`PropagateCopies` right after inlining and
    :class:`BorrowingLower` as the lowering."""

    def define_pipelines(self):
        pipeline = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pipeline.add_pass_after(PropagateCopies, InlineInlinables)
        pipeline.add_pass_after(BorrowingNativeLowering, NativeLowering)
        pipeline.passes = [entry for entry in pipeline.passes if entry[0] is not NativeLowering]
        pipeline.finalize()
        return [pipeline]


def kernel(function=None, *, cache: bool = True, **options):
    """``@kernel`` / ``@kernel(inline="always")``: how every gramalign kernel is compiled
    (``numba.njit`` with ``nogil``, this module's pipeline and, unless ``cache=False``, a
    :class:`~gramalign.kernel_cache.KernelCache`)."""

    def decorate(function):
        dispatcher = numba.njit(function, nogil=True, pipeline_class=KernelCompiler, **options)
        return cached(dispatcher) if cache else dispatcher

    return decorate if function is None else decorate(function)
