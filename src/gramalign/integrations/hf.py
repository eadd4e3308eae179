"""Hugging Face transformers integration: a LogitsProcessor for batched ``model.generate``."""

from __future__ import annotations

import math
import numbers
import time
import warnings
import weakref
from typing import Sequence

from ..errors import GramalignError, TokenRejected
from ..masking.compiler import CompiledGrammar
from ..masking.gc_guard import gc_paused
from ..masking.matcher import GrammarMatcher
from ..tokens.vocabulary import Vocabulary
from .extras import require
from .generation import Generation
from .torch_ops import allocate_token_bitmask, apply_token_bitmask_inplace

torch = require("torch", "hf")
LogitsProcessor = require("transformers", "hf").LogitsProcessor


def vocabulary_for_model(tokenizer, model) -> Vocabulary:
    """A Vocabulary whose size is the model's logits width and whose EOS ids are the ones its
    generation config names (``Vocabulary.from_hf(tokenizer, model=model)``).

    Kept with the model while the tokenizer and its size stay the same: building it reads
    every token (~40 ms for 49k tokens), and one-call generation asks for it on every call,
    where a new Vocabulary object would also make ``compile`` compile the grammar again."""
    found = _VOCABULARIES.get(model)
    if found is not None and found[0] is tokenizer and found[1] == len(tokenizer):
        return found[2]
    vocabulary = Vocabulary.from_hf(tokenizer, model=model)
    _VOCABULARIES[model] = (tokenizer, len(tokenizer), vocabulary)
    return vocabulary


_VOCABULARIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class GrammarLogitsProcessor(LogitsProcessor):
    """Masks ``model.generate`` logits so that every row follows its grammar.

    Pass one compiled grammar for all rows, or a list with one per row. Each call matches
    every row to the matcher of the row it continues (the one whose tokens are this row's
    minus the last), feeds that last token, then masks. So greedy search, sampling,
    ``num_return_sequences`` and beam search (``num_beams``, which reorders and duplicates
    rows between steps) all keep one matcher per row that has read exactly that row's
    tokens. EOS is allowed only where the row's text is complete, and once a row has ended
    only EOS is allowed. Beam search keeps ``-inf`` candidates (tokens the mask forbade) to
    fill its beams and never returns them: when a generation duplicates rows (beam search
    starts with ``num_beams`` copies of each prompt), a row that took a forbidden token is
    masked entirely from then on; otherwise the forbidden token raises :class:`TokenRejected`
    (a logits processor after this one raised a masked logit: put this one last). A new
    generation restarts the matchers; assisted generation, which moves lengths between
    calls, is refused with a :class:`GramalignError`.

    ``prefix`` is text the output already starts with: put it at the end of the prompt
    (after the chat template's generation prompt) to steer the model, and the grammar
    constrains what follows it (e.g. ``prefix="def is_even(n):"`` with the Python grammar).

    Each call accepts and fills with Python's automatic garbage collection paused (see
    :mod:`gramalign.masking.gc_guard`), so no mask waits for a collection; a collection that
    falls due runs after the call. Servers should also call :func:`gramalign.freeze_gc` once
    models, vocabularies and grammars are loaded.

    >>> processor = GrammarLogitsProcessor(compiled)                 # doctest: +SKIP
    >>> model.generate(ids, logits_processor=[processor], ...)       # doctest: +SKIP
    """

    def __init__(self, compiled: "CompiledGrammar | Sequence[CompiledGrammar]", *, prefix: "str | bytes" = ""):
        self._compiled = compiled
        self._prefix = prefix
        # One per row of the last call; None for a row that took a forbidden token (dead).
        self.matchers: "list[GrammarMatcher | None]" = []
        self._expected_length: int | None = None
        self._bitmask: torch.Tensor | None = None
        self._prompt: torch.Tensor | None = None
        self._prompt_length = 0
        self._previous: torch.Tensor | None = None  # the rows of the last call

    def reset(self) -> None:
        """Forget the current generation; the next call starts fresh matchers."""
        self.matchers = []
        self._expected_length = None
        self._previous = None

    def _start(self, batch_size: int) -> None:
        compiled = self._compiled
        if isinstance(compiled, CompiledGrammar):
            compiled = [compiled] * batch_size
        elif len(compiled) != batch_size:
            raise ValueError(f"got {len(compiled)} compiled grammars for a batch of {batch_size} rows")
        self._row_grammars = list(compiled)
        self.matchers = [c.matcher() for c in compiled]
        if self._prefix:
            for matcher in self.matchers:
                matcher.accept_string(self._prefix)  # StringRejected if the grammar cannot start so
        widths = {c.bitmask_width for c in compiled}
        if len(widths) != 1:
            raise ValueError("all rows' grammars must be compiled for vocabularies of one size")
        self._vocab_size = compiled[0].vocabulary.size
        self._bitmask = allocate_token_bitmask(batch_size, self._vocab_size)
        self._duplicates_rows = False

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        batch_size, length = input_ids.shape
        self._logits_width = scores.shape[-1]  # as wide as the logits the last tokens came from
        fresh = (self._expected_length is None or length != self._expected_length
                 or batch_size != len(self.matchers))
        if fresh and (self._expected_length is not None and batch_size == len(self.matchers)
                      and self._prompt_length < length
                      and torch.equal(input_ids[:, :self._prompt_length], self._prompt)):
            # Same prompt, but the sequence jumped: assisted generation.
            raise GramalignError(
                f"GrammarLogitsProcessor expected a sequence of length {self._expected_length} and got {length} "
                "within one generation: it follows one token per call, so assisted generation is not supported "
                "(use gramalign.samplers.speculative_sample for speculative decoding)")
        with gc_paused:  # no garbage collection inside the grammar work (see gramalign.masking.gc_guard)
            if not fresh:
                fresh = not self._advance(input_ids)
            if fresh:
                self._start(batch_size)
                self._prompt, self._prompt_length = input_ids.clone(), length
                self._duplicates_rows = batch_size > 1 and torch.unique(input_ids, dim=0).shape[0] < batch_size
            self._previous = input_ids.clone()
            self._expected_length = length + 1
            bitmask = self._bitmask
            for row, matcher in enumerate(self.matchers):
                if matcher is None:
                    bitmask[row] = 0  # dead row: nothing is allowed, so it stays at -inf
                else:
                    matcher.fill_next_token_bitmask(bitmask, row)
        apply_token_bitmask_inplace(scores, self._bitmask, vocab_size=self._vocab_size)
        return scores

    def _advance(self, input_ids: torch.Tensor) -> bool:
        """Give each row the matcher of the row it continues, fed the row's last token.

        False when no row continues any row of the last call (a new generation of the same
        shape); a :class:`GramalignError` when only some do.
        """
        previous = self._previous
        last_tokens = input_ids[:, -1].tolist()
        if torch.equal(input_ids[:, :-1], previous):
            parents = list(range(len(last_tokens)))  # greedy, sampling: every row goes on alone
        else:
            # Beam search reorders and duplicates rows: find each row's parent by content, among
            # rows with the same grammar (equal tokens and grammar mean equal matcher states).
            grammars = self._row_grammars
            rows_by_key: dict = {}
            for row, data in enumerate(previous.cpu().numpy()):
                rows_by_key.setdefault((id(grammars[row]), data.tobytes()), row)
            parents = [rows_by_key.get((id(grammars[row]), data.tobytes()))
                       for row, data in enumerate(input_ids[:, :-1].cpu().numpy())]
            self._duplicates_rows = True
            orphans = [row for row, parent in enumerate(parents) if parent is None]
            if len(orphans) == len(parents):
                return False
            if orphans:
                raise GramalignError(
                    f"GrammarLogitsProcessor: row {orphans[0]}'s tokens do not continue any row of the previous "
                    "step; it supports greedy search, sampling and beam search, which extend each row by one token "
                    "per call (call reset() between generations)")
        # An id outside the vocabulary has no bytes to feed: name it, rather than ignore it (after
        # EOS) or end its row. Beam search may pick a padding column past the vocabulary (masked
        # to -inf) to fill its beams; that row is dead, as with any forbidden filler token.
        limit = self._logits_width if self._duplicates_rows else self._vocab_size
        for row, token in enumerate(last_tokens):
            if not 0 <= token < limit:
                raise TokenRejected(token, f"out of range for row {row}: the vocabulary has ids "
                                           f"0..{self._vocab_size - 1} (it was chosen after this processor masked it "
                                           "out: put this processor last)")
        uses: dict[int, int] = {}
        for parent in parents:
            uses[parent] = uses.get(parent, 0) + 1
        old = self.matchers
        matchers: "list[GrammarMatcher | None]" = []
        for parent, token in zip(parents, last_tokens):
            matcher = old[parent]
            uses[parent] -= 1
            if matcher is not None:
                if uses[parent]:
                    matcher = matcher.fork()  # the parent itself goes to its last child, after every fork
                if not matcher.is_terminated():
                    if self._duplicates_rows:
                        if not matcher.try_accept_token(token):
                            matcher = None  # a forbidden token: beam search's -inf filler
                    else:
                        matcher.accept_token(token)  # TokenRejected: something un-masked it
            matchers.append(matcher)
        self.matchers = matchers
        return True


class _ChosenLogprobs(LogitsProcessor):
    """Sums the log-probability of each chosen token under the scores it sees, placed before
    the grammar's processor. That processor masks in place, leaving the logits of allowed
    tokens (the chosen one among them) as they were, so only each step's log-normaliser is
    taken before the mask; the chosen token is read from the next step's ``input_ids``."""

    def __init__(self):
        self.logprob = 0.0
        self._scores = self._normaliser = None

    def __call__(self, input_ids, scores):
        self.close(int(input_ids[0, -1]))
        self._scores, self._normaliser = scores, float(torch.logsumexp(scores[0].double(), dim=-1))
        return scores

    def close(self, token: int) -> None:
        """Count ``token`` as the choice of the last step seen."""
        if self._scores is not None:
            self.logprob += float(self._scores[0, token]) - self._normaliser
            self._scores = None


def _sampling_options(options: dict) -> dict:
    """``model.generate`` options with ``temperature`` read as :func:`gramalign.generate` reads it:
    0 is greedy, above 0 samples at that temperature; without one, greedy. transformers itself
    refuses 0 when sampling and, when not, warns that a temperature is ignored."""
    options = dict(options)
    if "temperature" not in options or options["temperature"] is None:
        options.pop("temperature", None)
        options.setdefault("do_sample", False)
        return options
    temperature = options.pop("temperature")
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not (
            0 <= temperature < math.inf):
        raise ValueError(f"temperature must be a finite number >= 0 (0: greedy), got {temperature!r}")
    sampling = temperature > 0
    if options.setdefault("do_sample", sampling) != sampling:
        raise ValueError(f"temperature={temperature} {'samples' if sampling else 'is greedy'}: "
                         f"do_sample={options['do_sample']} contradicts it (leave do_sample out)")
    if sampling:
        options["temperature"] = float(temperature)
    return options


def generate_chat(model, tokenizer, compiled: CompiledGrammar, messages: list[dict], *, max_new_tokens: int = 256,
                  chat_template_kwargs: dict | None = None, **generate_options) -> Generation:
    """Greedy (unless ``generate_options`` say otherwise: ``temperature`` above 0 samples, 0 is
    greedy, as for :func:`gramalign.generate`) answer to chat ``messages`` whose
    text follows ``compiled``'s grammar, through the model's chat template (``chat_template_kwargs``
    go to ``apply_chat_template``, e.g. ``{"tools": tools}``) and ``model.generate`` with a
    :class:`GrammarLogitsProcessor`. Its ``logprob`` is the answer's log-probability (EOS
    included when it ended the answer) under the scores the grammar's mask applies to: the
    unconstrained model's, after the processors of ``model.generate``'s own configuration.

    >>> answer = generate_chat(model, tokenizer, compiled, [{"role": "user", "content": "Hi"}])  # doctest: +SKIP
    >>> answer.text, answer.finished                                                               # doctest: +SKIP
    """
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                           return_dict=True, **(chat_template_kwargs or {}))
    generate_options = _sampling_options(generate_options)
    chosen = _ChosenLogprobs()
    start = time.perf_counter()
    output = model.generate(**prompt, max_new_tokens=max_new_tokens,
                            logits_processor=[chosen, GrammarLogitsProcessor(compiled)], **generate_options)
    seconds = time.perf_counter() - start
    new_tokens = output[0, prompt["input_ids"].shape[1]:].tolist()
    if new_tokens:
        chosen.close(new_tokens[-1])
    vocab = compiled.vocabulary
    finished = bool(new_tokens) and new_tokens[-1] in vocab.eos_token_ids
    if finished:
        new_tokens = new_tokens[:-1]
    return Generation(vocab.decode_bytes(new_tokens).decode("utf-8", errors="replace"), tuple(new_tokens), finished,
                      chosen.logprob, seconds=seconds)


def __getattr__(name: str):
    if name == "ChatAnswer":  # generate_chat's result type before Generation served both paths
        warnings.warn("gramalign.integrations.hf.ChatAnswer is deprecated: generate_chat returns a "
                      "gramalign.Generation", DeprecationWarning, stacklevel=2)
        return Generation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
