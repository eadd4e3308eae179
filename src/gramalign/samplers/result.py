"""What every sampler returns: one generated sequence as plain data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    """One generated sequence.

    ``token_ids`` excludes the final EOS; ``finished`` says whether EOS ended it (rather
    than the token budget). ``logprob`` is the log-probability of the tokens, EOS
    included, under the *unconstrained* model. ``log_weight`` is the log importance weight
    (AWRS/SMC: the log of the product of the local normaliser estimates; None where the
    sampler has no weight). ``constraint_checks`` counts single-token grammar checks
    (AWRS) and is 0 for samplers that fill masks. ``forced_tokens`` counts the tokens
    written by jump-forward rather than sampled.
    """

    token_ids: tuple[int, ...]
    finished: bool
    logprob: float
    log_weight: "float | None" = None
    constraint_checks: int = 0
    forced_tokens: int = 0
