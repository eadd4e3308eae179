"""KL(sampler || exact conditioned model) against the number of samples, on the toy
distortion case of tests/oracles/exact_laws.py (the oracle of tests/test_samplers.py);
writes docs/samplers_kl.png.

Run: PYTHONPATH=src:tests python benchmarks/samplers_plot.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from gramalign.samplers import ASApSampler, smc_sample  # noqa: E402
from oracles.exact_laws import distortion_case, empirical, kl, masked_exact, target_distribution  # noqa: E402

COUNTS = [10, 30, 100, 300, 1000, 3000]


def main() -> None:
    _, compiled, model = distortion_case()
    target, _ = target_distribution(model, compiled)
    masked_kl = kl(masked_exact(model, compiled), target)
    rng = np.random.default_rng(0)
    asap = ASApSampler(model, compiled)
    asap_samples = [asap.sample(rng=rng).token_ids for _ in range(COUNTS[-1])]
    smc_seqs, smc_weights = [], []
    while len(smc_seqs) < COUNTS[-1]:  # runs of 10 particles, weighted by their unnormalised weights
        result = smc_sample(model, compiled, num_particles=10, rng=rng)
        smc_seqs += [p.token_ids for p in result.particles]
        smc_weights += [math.exp(p.log_weight) for p in result.particles]
    asap_kl = [kl(empirical(asap_samples[:n]), target) for n in COUNTS]
    smc_kl = [kl(empirical(smc_seqs[:n], np.array(smc_weights[:n])), target) for n in COUNTS]
    print(f"{'samples':>8} {'masked (exact)':>15} {'ASAp':>10} {'SMC':>10}")
    for n, a, s in zip(COUNTS, asap_kl, smc_kl):
        print(f"{n:>8} {masked_kl:>15.4f} {a:>10.4f} {s:>10.4f}")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.axhline(masked_kl, color="tab:red", label="masked sampling (exact, any sample count)")
    ax.plot(COUNTS, asap_kl, "o-", label="ASAp (empirical)")
    ax.plot(COUNTS, smc_kl, "s-", label="SMC + AWRS, 10 particles/run (weighted empirical)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("samples (SMC: particles)")
    ax.set_ylabel("KL(sampler || model conditioned on grammar), nats")
    ax.set_title("Toy distortion case (tests/test_samplers.py)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = ROOT / "docs" / "samplers_kl.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
