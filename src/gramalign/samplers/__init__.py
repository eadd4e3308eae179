"""Samplers over a small LanguageModel protocol (numpy only, any backend).

- ``masked``: locally constrained sampling (mask, then temperature/top-k/top-p), batched.
- ``asap``: grammar-aligned sampling, converging to the model conditioned on the grammar.
- ``awrs``: adaptive weighted rejection sampling, single-token checks and unbiased weights.
- ``smc``: sequential Monte Carlo with AWRS proposals.
- ``speculative``: draft-and-verify decoding with the law of masked sampling from the target.
- ``jump_forward``: forced text written without the model, re-tokenized canonically.
- ``fim``: fill-in-the-middle, the middle sampled so that prefix + middle + suffix is a sentence.
- ``diffusion``: masked diffusion models, positions unmasked in any order, each proposal checked.
"""

from .asap import ASApSampler
from .awrs import AWRSStep, awrs_sample, awrs_step, normaliser_estimate
from .diffusion import DenoisingModel, DiffusionResult, TableDenoiser, diffusion_sample
from .fim import FimResult, fim_sample
from .masked import SamplingError, SamplingOptions, constrained_distribution, masked_sample
from .model import LanguageModel, ModelError, TableModel, log_softmax
from .result import Sample
from .smc import ParticlesExhausted, SMCResult, smc_sample
from .speculative import SpeculativeResult, speculative_sample

__all__ = ["ASApSampler", "AWRSStep", "DenoisingModel", "DiffusionResult", "FimResult", "TableDenoiser",
           "diffusion_sample", "LanguageModel", "ModelError", "ParticlesExhausted", "SMCResult", "Sample",
           "SamplingError", "SamplingOptions", "TableModel", "awrs_sample", "awrs_step", "constrained_distribution",
           "fim_sample", "log_softmax", "masked_sample", "normaliser_estimate", "smc_sample", "SpeculativeResult",
           "speculative_sample"]
