"""The horseshoe test's default global scale τ: misclassification risk of each τ rule on expression-study designs.

Backs ``horseshoe_test(tau="lfdr")`` as the default: τ is set so that the Datta–Ghosh cutoff is the one that
minimises the misclassification risk estimated by the two-groups local fdr (Storey's π̂₀, a nonparametric ML
alternative). The designs are those of ``stats_default_gamma2.py``:
10,000 two-sample t-tests with 10 observations per group (18 degrees of freedom) as z-scores, with 1%, 5% or 10%
signals whose standardised effect is random, N(0, 1), or fixed, ±1.5. The τ rules compared on the same draws:
``"lfdr"`` (the default), ``"storey"`` (τ = 1 − π̂₀, Storey's bootstrap, kept ≥ 1/n), ``"eb"`` (the count of
tests past √(2 log n), `estimate_sparsity`), ``"mmle"`` (`horseshoe_mmle_tau`), τ = 1 − π̂₀ with Storey's smoother
π̂₀ (`estimate_pi0`, kept ≥ 1/n), and τ = p (the true signal fraction);
beside them statsmodels' BH at α = 0.1 and the exact Bayes rule (the oracle). ``"lfdr"`` and ``"mmle"`` fit on
binned summaries by default; they also run with ``binned=False`` (every test), and ``differ_from_unbinned`` counts
the decisions, over all replicates, where the two differ. ``risk_per_test`` is the mean of
(false positives + false negatives) / n over the replicates. It writes ``benchmarks/results/stats_horseshoe_tau.json``.

    python benchmarks/stats_horseshoe_tau.py                  # 20 replicates
    python benchmarks/stats_horseshoe_tau.py --replicates 5   # a quick look
"""

from __future__ import annotations

import argparse

import jax.numpy as jnp
import numpy as np
from statsmodels.stats.multitest import multipletests

from _harness import print_table, write_results
from icmlx import stats
from stats_default_gamma2 import _summary, _t_design


def _taus(x, p):
    n, reps = x.shape[-1], x.shape[0]
    pv = stats.two_sided_pvalues(x)
    out = {"lfdr": "lfdr", "storey": "storey", "eb": "eb", "mmle": "mmle"}
    for method in ("smoother",):
        pi0 = jnp.asarray(stats.estimate_pi0(pv, method=method))
        out[f"1-pi0({method})"] = jnp.clip(1.0 - pi0, 1.0 / n, 1.0).astype(x.dtype)
    out["true p"] = jnp.full((reps,), p, x.dtype)
    return out, np.asarray(pv, np.float64)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=20)
    args = ap.parse_args(argv)
    n, reps = 10_000, args.replicates
    rng = np.random.default_rng(2026)
    rows = []
    for kind in ("random", "fixed"):
        for p in (0.01, 0.05, 0.1):
            z, nonnull, oracle = _t_design(rng, n, reps, p, kind)
            x = jnp.asarray(z)
            taus, pv = _taus(x, p)
            decisions = {f"horseshoe({k})": np.asarray(stats.horseshoe_test(x, t).reject) for k, t in taus.items()}
            for k in ("lfdr", "mmle"):  # fitted on every test instead of the binned summary
                decisions[f"horseshoe({k}, binned=False)"] = np.asarray(stats.horseshoe_test(x, k, binned=False).reject)
            decisions["BH(0.1)"] = np.stack([multipletests(r, alpha=0.1, method="fdr_bh")[0] for r in pv])
            decisions["oracle"] = oracle
            oracle_risk = _summary(oracle, nonnull)["risk"]
            for name, dec in decisions.items():
                s = _summary(dec, nonnull)
                row = {"design": f"t18 {kind}", "p": p, "rule": name, **s, "risk_per_test": s["risk"] / n,
                       "risk/oracle": s["risk"] / max(oracle_risk, 1e-12)}
                if f"{name[:-1]}, binned=False)" in decisions:
                    row["differ_from_unbinned"] = int((dec != decisions[f"{name[:-1]}, binned=False)"]).sum())
                rows.append(row)
    print_table(rows, columns=["design", "p", "rule", "fdr", "power", "risk_per_test", "risk/oracle"],
                title=f"horseshoe tau rules, t designs (n = 10 per group), {n} tests, {reps} replicates")
    path = write_results("stats_horseshoe_tau", rows, dtype="float32", extra={"n": n, "replicates": reps})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
