"""The default γ² rule of ``relative_belief_test``: FDR, power and Bayes risk against BH and the Bayes oracle.

Backs the choice of ``EBSparsityGamma2()`` as the rule used when ``gamma2`` is omitted. Both candidate rules that
need nothing but the data (``EBSparsityGamma2``, ``EBMMLEGamma2``) run on two-groups data from
``simulate_two_groups`` over a grid of sparsities p and slab variances τ². That includes the ABOS calibration
τ²(p) with C = 1. The references on the same draws are statsmodels' BH (``multipletests(fdr_bh)`` at α = 0.05
and 0.1) and the Bayes oracle, which knows p and τ².

Each cell reports the mean FDP (with its Monte Carlo standard error), the power, and the misclassification risk
(false positives plus false negatives, the Bayes risk with unit losses). It writes
``benchmarks/results/stats_default_gamma2.json``.

    python benchmarks/stats_default_gamma2.py              # n = 10,000, 100 replicates (about a minute)
    python benchmarks/stats_default_gamma2.py --quick      # n = 1,000, 50 replicates
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
from statsmodels.stats.multitest import multipletests

from _harness import print_table, write_results
from icmlx import stats


def _summary(decisions: np.ndarray, nonnull: np.ndarray) -> dict:
    tp = (decisions & nonnull).sum(1)
    fp = (decisions & ~nonnull).sum(1)
    fn = (~decisions & nonnull).sum(1)
    fdp = fp / np.maximum(tp + fp, 1)
    return {"fdr": float(fdp.mean()), "fdr_se": float(fdp.std(ddof=1) / np.sqrt(len(fdp))),
            "power": float((tp / np.maximum(nonnull.sum(1), 1)).mean()), "risk": float((fp + fn).mean())}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("-n", type=int, default=None)
    ap.add_argument("--replicates", type=int, default=None)
    args = ap.parse_args(argv)
    n = args.n or (1_000 if args.quick else 10_000)
    reps = args.replicates or (50 if args.quick else 100)
    rules = {"EBSparsityGamma2": stats.EBSparsityGamma2(), "EBMMLEGamma2": stats.EBMMLEGamma2()}
    rows = []
    for p in (0.001, 0.005, 0.01, 0.05, 0.1, 0.2):
        for tau2 in (4.0, 9.0, 25.0, None):
            t2 = float(stats.calibrate_tau2(p)) if tau2 is None else tau2
            sample = stats.simulate_two_groups(jax.random.key(7), n, p, t2, num_replicates=reps)
            nonnull = np.asarray(sample.nonnull)
            decisions = {name: np.asarray(stats.relative_belief_test(sample.x, gamma2=rule).reject)
                         for name, rule in rules.items()}
            pvalues = np.asarray(stats.two_sided_pvalues(sample.x)).astype(np.float64)
            for alpha in (0.05, 0.1):
                decisions[f"BH({alpha})"] = np.stack([multipletests(r, alpha=alpha, method="fdr_bh")[0]
                                                      for r in pvalues])
            decisions["oracle"] = np.asarray(stats.bayes_oracle_test(sample.x, p=p, tau2=t2).reject)
            oracle_risk = _summary(decisions["oracle"], nonnull)["risk"]
            for name, dec in decisions.items():
                s = _summary(dec, nonnull)
                rows.append({"p": p, "tau2": round(t2, 3), "rule": name, **s,
                             "risk/oracle": s["risk"] / max(oracle_risk, 1e-12)})
    print_table(rows, title=f"gamma2 rules on two-groups data, n = {n}, {reps} replicates")
    for name in (*rules, "BH(0.1)"):
        sub = [r for r in rows if r["rule"] == name]
        print(f"{name:18s} FDR {min(r['fdr'] for r in sub):.3f}-{max(r['fdr'] for r in sub):.3f}  "
              f"risk/oracle median {np.median([r['risk/oracle'] for r in sub]):.3f} "
              f"worst {max(r['risk/oracle'] for r in sub):.3f}")
    path = write_results("stats_default_gamma2", rows, dtype="float32",
                         extra={"n": n, "replicates": reps, "quick": args.quick})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
