"""The default γ² rule of ``relative_belief_test``: FDR, power and Bayes risk against BH and the Bayes oracle.

Backs the choice of ``EBLocalFDRGamma2()`` as the rule used when ``gamma2`` is omitted. The rules that need
nothing but the data (``EBLocalFDRGamma2``, ``EBStoreyGamma2``, ``EBSparsityGamma2``, ``EBMMLEGamma2``) run on
two-groups data from ``simulate_two_groups`` over a grid of sparsities p and slab variances τ². That includes the
ABOS calibration τ²(p) with C = 1. The references on the same draws are statsmodels' BH
(``multipletests(fdr_bh)`` at α = 0.05 and 0.1) and the Bayes oracle, which knows p and τ².

A second part ("t designs") runs expression-study designs: n two-sample t-tests with 10 observations per group
(18 degrees of freedom), converted to z-scores through the t distribution, with 1%, 5% or 10% signals whose
standardised effect is random, N(0, 1), or fixed, ±1.5. The oracle there is the exact Bayes rule (it knows p and
the t statistic's null and alternative densities: reject iff p f1(t) > (1 - p) f0(t)). The horseshoe test with its
default τ (``horseshoe_test(x)``, reported as ``horseshoe(default)``) is reported on the same draws.

The default rule fits on a binned summary; ``EBLocalFDRGamma2(binned=False)`` (every test) runs on the same draws,
and the default's rows count the decisions that differ from it (``differ_from_unbinned``, over all replicates) and
the replicates where none does. Each cell reports the mean FDP (with its Monte Carlo standard error), the power,
and the misclassification risk (false positives plus false negatives, the Bayes risk with unit losses;
``risk_per_test`` divides by n). It writes ``benchmarks/results/stats_default_gamma2.json``.

    python benchmarks/stats_default_gamma2.py              # n = 10,000, 100 replicates; t designs 50 replicates
    python benchmarks/stats_default_gamma2.py --quick      # n = 1,000, 50 replicates; t designs n = 10,000, 20
    python benchmarks/stats_default_gamma2.py --only-t     # the t designs alone
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps
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


UNBINNED = "EBLocalFDRGamma2(binned=False)"

#: Two-sample t-tests with 10 observations per group: the statistic's degrees of freedom and the variance factor of
#: the mean difference (1/10 + 1/10).
T_DF, T_VAR = 18, 0.2


def _t_design(rng, n, reps, p, kind):
    """t statistics (as z-scores), the truth, and the exact Bayes rule's decisions for one design."""
    nonnull = rng.random((reps, n)) < p
    t = sps.t.rvs(T_DF, size=(reps, n), random_state=rng)
    if kind == "random":  # effect ~ N(0, 1) in sd units: the statistic is sqrt(c) * t_18 with c = (0.2 + 1) / 0.2
        c = (T_VAR + 1.0) / T_VAR
        t = np.where(nonnull, np.sqrt(c) * sps.t.rvs(T_DF, size=(reps, n), random_state=rng), t)

        def f1(v):
            return sps.t.pdf(v / np.sqrt(c), T_DF) / np.sqrt(c)
    else:  # effect +-1.5 sd: noncentral t with noncentrality 1.5 / sqrt(0.2), random sign
        nc = 1.5 / np.sqrt(T_VAR)
        sign = rng.choice([-1.0, 1.0], (reps, n))
        t = np.where(nonnull, sign * sps.nct.rvs(T_DF, nc, size=(reps, n), random_state=rng), t)

        def f1(v):
            return 0.5 * (sps.nct.pdf(v, T_DF, nc) + sps.nct.pdf(v, T_DF, -nc))
    z = np.sign(t) * sps.norm.isf(sps.t.sf(np.abs(t), T_DF))
    oracle = p * f1(t) > (1.0 - p) * sps.t.pdf(t, T_DF)
    return z.astype(np.float32), nonnull, oracle


def _decide(x, rules):
    """The data-driven rules' decisions, the horseshoe test's default and BH on the same z-scores."""
    decisions = {name: np.asarray(stats.relative_belief_test(x, gamma2=rule).reject) for name, rule in rules.items()}
    # the default rule fitted on every test instead of its binned summary: the binning's effect on the decisions
    decisions[UNBINNED] = np.asarray(stats.relative_belief_test(x, gamma2=stats.EBLocalFDRGamma2(binned=False)).reject)
    decisions["horseshoe(default)"] = np.asarray(stats.horseshoe_test(x).reject)
    pvalues = np.asarray(stats.two_sided_pvalues(x)).astype(np.float64)
    for alpha in (0.05, 0.1):
        decisions[f"BH({alpha})"] = np.stack([multipletests(r, alpha=alpha, method="fdr_bh")[0] for r in pvalues])
    return decisions


def _rows(decisions, nonnull, n, **design):
    oracle_risk = _summary(decisions["oracle"], nonnull)["risk"]
    out = []
    for name, dec in decisions.items():
        s = _summary(dec, nonnull)
        row = {**design, "rule": name, **s, "risk_per_test": s["risk"] / n,
               "risk/oracle": s["risk"] / max(oracle_risk, 1e-12)}
        if name == "EBLocalFDRGamma2":
            differ = dec != decisions[UNBINNED]
            row["differ_from_unbinned"] = int(differ.sum())  # decisions, over all replicates
            row["replicates_equal_to_unbinned"] = int((~differ.any(axis=1)).sum())
        out.append(row)
    return out


def _t_designs(n, reps, rules):
    rng = np.random.default_rng(2026)
    rows = []
    for kind in ("random", "fixed"):
        for p in (0.01, 0.05, 0.1):
            z, nonnull, oracle = _t_design(rng, n, reps, p, kind)
            decisions = _decide(jnp.asarray(z), rules)
            decisions["oracle"] = oracle
            rows += _rows(decisions, nonnull, n, design=f"t18 {kind}", p=p)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("-n", type=int, default=None)
    ap.add_argument("--replicates", type=int, default=None)
    ap.add_argument("--only-t", action="store_true", help="run the t-statistic designs only")
    args = ap.parse_args(argv)
    n = args.n or (1_000 if args.quick else 10_000)
    reps = args.replicates or (50 if args.quick else 100)
    rules = {"EBLocalFDRGamma2": stats.EBLocalFDRGamma2(), "EBStoreyGamma2": stats.EBStoreyGamma2(),
             "EBSparsityGamma2": stats.EBSparsityGamma2(), "EBMMLEGamma2": stats.EBMMLEGamma2()}
    rows = []
    if not args.only_t:
        for p in (0.001, 0.005, 0.01, 0.05, 0.1, 0.2):
            for tau2 in (4.0, 9.0, 25.0, None):
                t2 = float(stats.calibrate_tau2(p)) if tau2 is None else tau2
                sample = stats.simulate_two_groups(jax.random.key(7), n, p, t2, num_replicates=reps)
                nonnull = np.asarray(sample.nonnull)
                decisions = _decide(sample.x, rules)
                decisions["oracle"] = np.asarray(stats.bayes_oracle_test(sample.x, p=p, tau2=t2).reject)
                rows += _rows(decisions, nonnull, n, design="normal", p=p, tau2=round(t2, 3))
        print_table(rows, title=f"gamma2 rules on two-groups data, n = {n}, {reps} replicates")
    t_n, t_reps = 10_000, (20 if args.quick else 50)
    t_rows = _t_designs(t_n, t_reps, rules)
    print_table(t_rows, title=f"t designs (n = 10 per group), {t_n} tests, {t_reps} replicates")
    rows += t_rows
    for design in ("normal", "t18 random", "t18 fixed"):
        for name in (*rules, UNBINNED, "horseshoe(default)", "BH(0.1)"):
            sub = [r for r in rows if r["rule"] == name and r["design"] == design]
            if sub:
                differ = sum(r.get("differ_from_unbinned", 0) for r in sub)
                print(f"{design:11s} {name:31s} FDR {min(r['fdr'] for r in sub):.3f}-{max(r['fdr'] for r in sub):.3f}  "
                      f"risk/oracle median {np.median([r['risk/oracle'] for r in sub]):.4f} "
                      f"worst {max(r['risk/oracle'] for r in sub):.4f}"
                      + (f"  decisions differing from unbinned: {differ}" if name == "EBLocalFDRGamma2" else ""))
    path = write_results("stats_default_gamma2", rows, dtype="float32",
                         extra={"n": n, "replicates": reps, "quick": args.quick, "t_designs_n": t_n,
                                "t_designs_replicates": t_reps, "only_t": args.only_t})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
