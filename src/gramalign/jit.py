"""How gramalign compiles its numba kernels: one decorator, and a compiler pass that keeps
inlined helpers from costing reference counts.

numba inlines a helper declared ``inline="always"`` by binding each of its parameters to
the caller's argument (``param = arg``), and every such binding of an array increfs it on
entry and decrefs it where the parameter dies. LLVM's reference-count pruning removes the
pairs in straight code but not across the branches of a helper's body, so a helper that
takes twenty arrays costs forty atomic operations per call. :class:`PropagateCopies`
replaces each such binding by the argument itself where that is provably the same value.
"""

from __future__ import annotations

import functools

import numba
from numba.core import ir
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.ir_utils import build_definitions, replace_vars
from numba.core.untyped_passes import InlineInlinables


@register_pass(mutates_CFG=False, analysis_only=False)
class PropagateCopies(FunctionPass):
    """Replace ``x = y`` (both variables) by ``y`` in the uses of ``x`` when ``x`` and ``y``
    are each assigned once and the copy dominates every use of ``x`` (so ``y`` cannot have
    changed in between: its one assignment dominates the copy)."""

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
                if isinstance(stmt, ir.Assign):
                    defined.setdefault(stmt.target.name, []).append((label, index, stmt))
                    read = stmt.value.list_vars() if hasattr(stmt.value, "list_vars") else []
                else:
                    read = stmt.list_vars()
                for var in read:
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
            if all((use_label == label and use_index > index) or
                   (use_label != label and label in dominators[use_label])
                   for use_label, use_index in uses.get(name, ())):
                replaced[name] = (label, stmt, source)
        if not replaced:
            return False
        copies = {id(stmt) for _, stmt, _ in replaced.values()}
        for block in blocks.values():
            block.body = [stmt for stmt in block.body if id(stmt) not in copies]
        replace_vars(blocks, {name: source for name, (_, _, source) in replaced.items()})
        func_ir._definitions = build_definitions(blocks)
        return True


class KernelCompiler(CompilerBase):
    """numba's nopython pipeline with :class:`PropagateCopies` right after inlining."""

    def define_pipelines(self):
        pipeline = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pipeline.add_pass_after(PropagateCopies, InlineInlinables)
        pipeline.finalize()
        return [pipeline]


kernel = functools.partial(numba.njit, cache=True, nogil=True, pipeline_class=KernelCompiler)
"""``@kernel`` / ``@kernel(inline="always")``: how every gramalign kernel is compiled."""
