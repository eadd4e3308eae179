"""The examples in docstrings run and print what they claim: every module of the package."""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import gramalign

# Left out: __main__ (importing it runs the command line) and, where vLLM is not installed (it
# has an environment of its own, see tests/vllm_engine), the vLLM processor, which has no
# examples and cannot be imported without it.
MODULES = sorted(info.name for info in pkgutil.walk_packages(gramalign.__path__, "gramalign.")
                 if not info.name.endswith(".__main__")
                 and (info.name != "gramalign.integrations.vllm" or importlib.util.find_spec("vllm")))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_modules_with_examples_are_found():
    # the walk finds the package's modules, and doctests run in those that have examples
    assert {"gramalign.bitsets", "gramalign.grammar.grammar", "gramalign.masking.matcher",
            "gramalign.samplers.model"} <= set(MODULES)
    assert ">>>" not in open(importlib.util.find_spec("gramalign.integrations.vllm").origin).read()
    assert doctest.testmod(importlib.import_module("gramalign.bitsets")).attempted >= 2
