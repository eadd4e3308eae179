"""The examples in docstrings run and print what they claim."""

import doctest

import pytest

import gramalign.grammar.first_match
import gramalign.grammar.grammar
import gramalign.grammar.json_numbers
import gramalign.integrations.extras
import gramalign.masking.gc_guard
import gramalign.masking.matcher
import gramalign.masking.warm_up
import gramalign.samplers.model


@pytest.mark.parametrize("module", [gramalign.grammar.first_match, gramalign.grammar.grammar, gramalign.grammar.json_numbers,
                                    gramalign.integrations.extras,
                                    gramalign.masking.gc_guard, gramalign.masking.matcher, gramalign.masking.warm_up,
                                    gramalign.samplers.model])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
