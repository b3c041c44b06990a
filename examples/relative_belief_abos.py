"""Relative-belief multiple testing is asymptotically Bayes optimal under sparsity (ABOS).

Reproduces the claim of "An Evidential Route to Asymptotic Bayes Optimality under Sparsity" (ICML 2026) in the
two-groups model of Bogdan, Chakrabarti, Frommlet & Ghosh (2011): with the right single hyperparameter gamma^2
the relative-belief rule "reject iff RB(0|x) < 1" has Bayes risk / Bayes-oracle risk -> 1 as n grows, while
naive RB (gamma = tau) and Bonferroni drift away and BH needs a shrinking level.

Design: sigma = 1, delta0 = deltaA = 1, p = n^-1/2, tau^2 calibrated so that
log(v)/u = C = 1. Two parts:

* exact ratios (closed form, float64) of every fixed-threshold rule for n = 1e2 .. 1e12;
* Monte Carlo paired ratios (common random numbers, SE) for all rules, data-driven ones included, for
  n = 1e2 .. 1e5 (``--quick``: n <= 1e4 with a quarter of the replicates).

Usage::

    python examples/relative_belief_abos.py --quick        # n <= 1e4, a quarter of the replicates
    python examples/relative_belief_abos.py                # full protocol
"""

from __future__ import annotations

import argparse
import math
import pathlib
import time

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from icmlx.stats import (  # noqa: E402
    EBMMLEGamma2,
    EBSparsityGamma2,
    OracleGamma2,
    SparsityGamma2,
    abos_risk_ratio,
    benjamini_hochberg,
    bfdr_threshold,
    bonferroni,
    bonferroni_threshold,
    calibrate_tau2,
    horseshoe_test,
    horseshoe_threshold,
    relative_belief_gamma2,
    relative_belief_test,
    relative_belief_threshold,
    simulate_risk_ratios,
    two_sided_pvalues,
)

HERE = pathlib.Path(__file__).resolve().parent
MC_DESIGN = {100: 10_000, 1_000: 2_000, 10_000: 300, 100_000: 40}


def exact_table(ns: np.ndarray) -> dict[str, np.ndarray]:
    """Exact ratios R_rule / R_BO of the fixed-threshold rules (float64)."""
    with jax.enable_x64(True):
        n = jnp.asarray(ns, jnp.float64)
        p = n**-0.5
        tau2 = calibrate_tau2(p)
        # a gamma2 rule holds one static (p, tau2): evaluate it along the grid of n
        pts = list(zip(p.tolist(), tau2.tolist()))
        g_h1 = jnp.stack([relative_belief_gamma2(OracleGamma2(p=pi, tau2=ti)) for pi, ti in pts])
        g_h2 = jnp.stack([relative_belief_gamma2(SparsityGamma2(p=pi)) for pi, _ in pts])
        out = {
            "RB H1 (oracle gamma)": abos_risk_ratio(relative_belief_threshold(g_h1), p, tau2),
            "RB H2 (sparsity gamma)": abos_risk_ratio(relative_belief_threshold(g_h2), p, tau2),
            "RB naive (gamma = tau)": abos_risk_ratio(relative_belief_threshold(tau2), p, tau2),
            "BH .05 (BFDR thr.)": abos_risk_ratio(bfdr_threshold(0.05, p, tau2), p, tau2),
            "BH .20 (BFDR thr.)": abos_risk_ratio(bfdr_threshold(0.2, p, tau2), p, tau2),
            "BH 1/log n (BFDR thr.)": abos_risk_ratio(bfdr_threshold(1 / jnp.log(n), p, tau2), p, tau2),
            "Bonferroni .05": abos_risk_ratio(bonferroni_threshold(n, 0.05), p, tau2),
            "horseshoe tau = p": abos_risk_ratio(horseshoe_threshold(p) ** 2, p, tau2),
        }
        return {k: np.asarray(v, np.float64) for k, v in out.items()}


def mc_rules(n: int, p: float, tau2: float) -> dict:
    g_h1 = float(relative_belief_gamma2(OracleGamma2(p=p, tau2=tau2)))
    a_log = 1.0 / math.log(n)
    return {
        "RB H1 (oracle gamma)": lambda x: relative_belief_test(x, gamma2=g_h1).reject,
        "RB H2 (sparsity gamma)": lambda x: relative_belief_test(x, gamma2=SparsityGamma2(p=p)).reject,
        "RB H3 (EB sparsity)": lambda x: relative_belief_test(x, gamma2=EBSparsityGamma2()).reject,
        "RB H4 (EB MMLE)": lambda x: relative_belief_test(x, gamma2=EBMMLEGamma2(num_em_steps=40)).reject,
        "RB naive (gamma = tau)": lambda x: relative_belief_test(x, gamma2=tau2).reject,
        "BH .05": lambda x: benjamini_hochberg(two_sided_pvalues(x), 0.05).reject,
        "BH .10": lambda x: benjamini_hochberg(two_sided_pvalues(x), 0.10).reject,
        "BH 1/log n": lambda x: benjamini_hochberg(two_sided_pvalues(x), a_log).reject,
        "Bonferroni .05": lambda x: bonferroni(two_sided_pvalues(x), 0.05).reject,
        "horseshoe tau = p": lambda x: horseshoe_test(x, p).reject,
        "horseshoe EB tau": lambda x: horseshoe_test(x, "eb").reject,
    }


def monte_carlo(design: dict[int, int]) -> dict[int, dict[str, tuple[float, float]]]:
    out = {}
    for n, reps in design.items():
        t0 = time.perf_counter()
        p = n**-0.5
        tau2 = float(calibrate_tau2(p))
        cmp = simulate_risk_ratios(jax.random.key(n), mc_rules(n, p, tau2), n=n, p=p, tau2=tau2,
                                   num_replicates=reps)
        out[n] = cmp.as_dict()
        print(f"  MC n={n:>7} R={reps:>6}: {time.perf_counter() - t0:5.1f} s", flush=True)
    return out


def plot(ns, exact, mc, path: pathlib.Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    ax = axes[0]
    for name, r in exact.items():
        style = "-" if name.startswith("RB") else "--"
        ax.plot(ns, np.maximum(r - 1.0, 1e-5), style, label=name,
                lw=2.2 if name.startswith("RB H1") else 1.2)
    ax.set(xscale="log", yscale="log", xlabel="number of tests n",
           ylabel="excess risk R_rule / R_oracle - 1 (exact)",
           title="Exact excess risk, p = n^-1/2, C = 1 (ABOS: -> 0)", ylim=(1e-5, 1e5))
    ax.legend(fontsize=7)
    ax = axes[1]
    names = [k for k in next(iter(mc.values())) if k != "oracle" and "naive" not in k]
    nn = np.array(sorted(mc))
    if nn.size == 1:  # one sample size: the rules side by side on a categorical axis
        n = int(nn[0])
        for i, name in enumerate(names):
            r, se = mc[n][name]
            ax.errorbar([i], [r], yerr=[se], marker="o", ms=4, capsize=3, ls="none",
                        color="tab:blue" if name.startswith("RB") else "tab:gray")
        ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=7)
        ax.set(xlabel=f"rule (every point: n = {n:,} tests)", xlim=(-0.6, len(names) - 0.4))
    else:  # several sizes: each rule's points are shifted sideways around their n so that the bars do not overlap
        for i, name in enumerate(names):
            r = np.array([mc[n][name][0] for n in nn])
            se = np.array([mc[n][name][1] for n in nn])
            ax.errorbar(nn * (1 + 0.04 * (i - len(names) / 2)), r, yerr=se, marker="o", ms=3, capsize=2,
                        label=name, ls="-" if name.startswith("RB") else ":")
        ax.set(xscale="log", xlabel="number of tests n (rules shifted sideways around each n)")
        ax.legend(fontsize=7, ncol=2)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set(ylabel="paired risk ratio to the oracle (MC ± SE)", title="Monte Carlo (common random numbers)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(quick: bool, outdir: pathlib.Path, mc_sizes=None) -> tuple[np.ndarray, dict, dict]:
    """Exact table, Monte Carlo (at the sizes of ``MC_DESIGN``, or only those in ``mc_sizes``), figure."""
    outdir.mkdir(parents=True, exist_ok=True)
    ns = np.logspace(2, 12, 21)
    exact = exact_table(ns)
    design = {n: r // 4 for n, r in MC_DESIGN.items() if n <= 10_000} if quick else MC_DESIGN
    if mc_sizes is not None:
        design = {n: r for n, r in design.items() if n in mc_sizes}
    mc = monte_carlo(design)
    plot(ns, exact, mc, outdir / "relative_belief_abos.png")
    # table: exact at decades, then MC
    idx = [0, 2, 4, 6, 8, 12, 20]
    head = "rule".ljust(26) + "".join(f"n=1e{int(round(math.log10(ns[i]))):<5}" for i in idx)
    print("\nExact risk ratio to the Bayes oracle (p = n^-1/2, C = 1)")
    print(head)
    for name, r in exact.items():
        print(name.ljust(26) + "".join(f"{r[i]:<9.5g}" for i in idx))
    print("\nMonte Carlo paired risk ratio (+- SE), common random numbers")
    nn = sorted(mc)
    print("rule".ljust(26) + "".join(f"n={n:<14}" for n in nn))
    for name in mc[nn[0]]:
        print(name.ljust(26) + "".join(f"{mc[n][name][0]:.3f}+-{mc[n][name][1]:.3f}   " for n in nn))
    print(f"\nfigure: {outdir / 'relative_belief_abos.png'}")
    return ns, exact, mc


def summarise(ns, exact, mc) -> list[dict]:
    h1 = exact["RB H1 (oracle gamma)"]
    naive = exact["RB naive (gamma = tau)"]
    bonf = exact["Bonferroni .05"]
    rows = [
        {
            "claim": "RB (gamma^2 rule OracleGamma2, H1) exact risk ratio decreases to 1 in n",
            "measured": f"{h1[0]:.4f} (1e2) -> {h1[4]:.4f} (1e4) -> {h1[-1]:.4f} (1e12)",
            "expected": "strictly decreasing, < 1.02 for n >= 1e3 (reference 1.0168 -> 1.0091)",
            "ok": bool(np.all(np.diff(h1) < 0) and np.all(h1[2:] < 1.02)
                       and abs(h1[4] - 1.0091) < 1e-3),
        },
        {
            "claim": "naive RB (gamma = tau) and Bonferroni are not ABOS (ratio grows)",
            "measured": f"naive {naive[0]:.2f} -> {naive[-1]:.3g}; Bonf {bonf[0]:.3f} -> {bonf[-1]:.3f}",
            "expected": "naive > 2 increasing; Bonferroni increasing",
            "ok": bool(np.all(naive > 2) and np.all(np.diff(naive) > 0) and np.all(np.diff(bonf) > 0)),
        },
    ]
    n_big = max(mc)
    r3, se3 = mc[n_big]["RB H3 (EB sparsity)"]
    r1, se1 = mc[n_big]["RB H1 (oracle gamma)"]
    rb, seb = mc[n_big]["BH .10"]
    rows.append({
        "claim": f"MC at n={n_big}: RB H1 and EB-sparsity RB within ~2% of the oracle, like BH(.10)",
        "measured": f"H1 {r1:.3f}+-{se1:.3f}, H3 {r3:.3f}+-{se3:.3f}, BH.10 {rb:.3f}+-{seb:.3f}",
        "expected": "each in [0.99, 1.02] (reference: 1.009, 1.003, 1.002 at n=1e4)",
        "ok": bool(all(0.99 - 2 * s <= r <= 1.02 + 2 * s for r, s in [(r1, se1), (r3, se3), (rb, seb)])),
    })
    return rows


def tour(outdir: pathlib.Path) -> list[dict]:
    """Quick-scale run for ``examples/tour.py``: summary rows (claim, measured, expected, ok).

    The Monte Carlo runs only at n = 10,000, the size of its claim (each n is a program of its own; n = 100 and
    1,000 only draw the figure's curve, which ``python examples/relative_belief_abos.py --quick`` keeps). The
    replicates of each n come from ``key(n)``, so the n = 10,000 figures are those of the three-size run.
    """
    return summarise(*run(True, pathlib.Path(outdir), mc_sizes=(10_000,)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n <= 1e4 and R/4 (about a minute)")
    parser.add_argument("--outdir", type=pathlib.Path, default=HERE / "out")
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = summarise(*run(args.quick, args.outdir))
    print()
    for r in rows:
        print(f"[{'ok' if r['ok'] else 'MISS'}] {r['claim']}\n      measured: {r['measured']}\n"
              f"      expected: {r['expected']}")
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
