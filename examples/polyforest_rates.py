"""Sample complexity of poly-forest learning (Gao, Wang & Aragam, ICML 2026, arXiv:2507.05689).

The paper's message: for poly-forests, structure learning is exactly as hard as the CI test it uses. The PC-tree
learner (conditioning sets of size <= 1, every node a candidate separator, calibrated tests) recovers the CPDAG once
``n >~ log d / c^alpha``, where ``c`` is the signal strength of the CI tester. Holding the signal fixed, the sample
size ``n*`` needed for exact recovery therefore grows like ``log d``: recovery curves plotted against ``n / log d``
collapse across ``d`` (up to a constant factor), for each of the three testers of the paper.

One fixed design for every ``d`` (nothing is tuned per ``d``). The poly-trees have in-degree <= 2 (a random
recursive tree whose edges are oriented at random, re-oriented where a node already has two parents), so the local
structure, hence the signal, does not change with ``d``:

* Gaussian: unit variances and edge weights ``±r``, ``r = 0.6`` (noise variance ``1 - sum of squared parent
  weights``), so every edge's correlation is ``±r`` and the weakest signal PC-tree needs (a pair two steps apart
  through a non-collider must test dependent) is ``c_min = r^2 = 0.36``; Fisher-z at level ``alpha = 0.05 / d^2``.
* Bernoulli: ``icmlx.structure.sample_bernoulli`` with ``strength = 0.45``
  (``P(x=1 | pa) = 1/2 + 0.45 * mean_k s_k (2 x_k - 1)``, roots Bernoulli(1/2)); in the ±1 coding an edge into a
  node with ``p`` parents has correlation ``0.9 / p`` and correlations multiply along paths, so
  ``c_min = 0.45^2 ≈ 0.20``; Pearson chi^2 tests (``ci_test="bernoulli"``) at ``alpha = 0.05 / d^2``.
* nonparametric: ``icmlx.structure.sample_nonlinear`` (``x_j = sum W tanh(x_pa) + N(0, 1)``, ``|W| ~ U[1, 2]``)
  with ``ci_test=Nonparametric(num_bins=3)``: binned U-statistic with 3 equal-frequency bins for the tested pair and its
  calibrated asymptotic p-value (``icmlx.structure.nonparametric_test``) at ``alpha = 0.05 / d^2``. The separator
  is cut into ``cond_bins = max(3, round(sqrt(n) / 5))`` bins (``pc_tree``'s default,
  ``icmlx.structure.default_cond_bins``): conditioning on a binned separator leaves a
  residual dependence that a calibrated test detects as ``n`` grows unless the bins shrink with ``n`` (with a
  fixed 7 bins, false edges between pairs two steps apart grew from 0.1 to 0.3 per graph between n = 9600 and
  19200 at d = 8).

``alpha = 0.05 / d^2`` is the union bound over the ~d^3 tests (the paper's ``log d``). The check is the rate,
stated fairly: the ratio ``max_d / min_d`` of ``n* / log d`` (``n*`` = sample size at 50% exact recovery,
interpolated on the log-n grid) stays below 2 while ``d`` grows (``n*`` itself, or ``n* / d``, would not collapse),
and recovery is exact (>= 0.9 of the replicates) at the largest ``n``.

Replicates at different ``n`` are prefixes of one sample of size ``max n`` per poly-tree (common random numbers:
one sampler compilation per ``(tester, d)``).

Usage::

    python examples/polyforest_rates.py --quick     # ~2-3 CPU-minutes
    python examples/polyforest_rates.py             # more replicates, finer grid, larger d
"""

from __future__ import annotations

import argparse
import functools
import math
import pathlib
import time

import jax
import jax.numpy as jnp
import matplotlib
import matplotlib.ticker
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from icmlx.structure import (  # noqa: E402
    Nonparametric,
    dag_to_cpdag,
    exact_recovery,
    pc_tree,
    sample_bernoulli,
    sample_nonlinear,
    shd,
)

EDGE_R = 0.6  # Gaussian edge correlation |r| (2 r^2 < 1 for in-degree 2)
BERN_STRENGTH = 0.45  # sample_bernoulli strength (< 1/2)
NP_BINS = 3  # nonparametric: bins of the tested pair


def bounded_polytree(rng: np.random.Generator, d: int, max_indegree: int = 2) -> np.ndarray:
    """Random poly-tree with in-degree <= max_indegree: random recursive tree, random edge directions."""
    dag = np.zeros((d, d), bool)
    indeg = np.zeros(d, int)
    for i in range(1, d):
        p = int(rng.integers(i))
        if rng.random() < 0.5 and indeg[p] < max_indegree:
            dag[i, p] = True  # i -> p
            indeg[p] += 1
        else:
            dag[p, i] = True  # p -> i (i has no parent yet)
            indeg[i] += 1
    perm = rng.permutation(d)
    return dag[np.ix_(perm, perm)]


@functools.partial(jax.jit, static_argnames=("n",))
def _std_gaussian(key, dag, n, r):
    """Unit-variance linear SEM: edge weights ±r, noise sd sqrt(1 - sum of squared parent weights)."""
    dtype = jnp.zeros((), float).dtype
    k1, k2 = jax.random.split(key)
    sign = jnp.where(jax.random.bernoulli(k1, 0.5, dag.shape), 1.0, -1.0).astype(dtype)
    w = jnp.where(dag, r * sign, 0.0).astype(dtype)
    noise_sd = jnp.sqrt(1.0 - jnp.sum(w**2, axis=0))
    e = jax.random.normal(k2, (n, dag.shape[0]), dtype) * noise_sd
    eye = jnp.eye(dag.shape[0], dtype=dtype)
    return jnp.linalg.solve((eye - w).T, e.T).T


def gaussian_signal(dag: np.ndarray, r: float = EDGE_R) -> float:
    """Signal c of the Gaussian tests PC-tree must get right: the smallest |correlation| or |partial
    correlation given one node| of an adjacent pair, and the smallest |correlation| of a pair two steps apart
    through a non-collider (its marginal dependence is what rules out a false v-structure)."""
    d = dag.shape[0]
    w = np.where(dag, r, 0.0)  # signs do not change |rho|
    a = np.linalg.inv(np.eye(d) - w)
    cov = a.T @ np.diag(1.0 - (w**2).sum(0)) @ a
    skel = dag | dag.T
    c = math.inf
    for j, k in zip(*np.nonzero(dag)):
        c = min(c, abs(cov[j, k]))
        for l in range(d):
            if l in (j, k):
                continue
            pr = (cov[j, k] - cov[j, l] * cov[k, l]) / math.sqrt((1 - cov[j, l] ** 2) * (1 - cov[k, l] ** 2))
            c = min(c, abs(pr))
    for l in range(d):
        nb = np.nonzero(skel[l])[0]
        for j in nb:
            for k in nb:
                if j < k and not (dag[j, l] and dag[k, l]):  # j - l - k, l not a collider
                    c = min(c, abs(cov[j, k]))
    return c


def bernoulli_signal(dag: np.ndarray, strength: float = BERN_STRENGTH) -> float:
    """Smallest |correlation| (±1 coding) of an adjacent pair or of a pair two steps apart through a
    non-collider under ``sample_bernoulli``: an edge into a node with p parents has correlation 2 strength / p,
    and correlations multiply along a poly-tree path."""
    npa = np.maximum(dag.sum(0), 1)
    corr = np.where(dag, 2 * strength / npa[None, :], 0.0)
    corr = corr + corr.T
    skel = dag | dag.T
    c = float(corr[skel].min()) if skel.any() else math.inf
    for l in range(dag.shape[0]):
        nb = np.nonzero(skel[l])[0]
        for j in nb:
            for k in nb:
                if j < k and not (dag[j, l] and dag[k, l]):
                    c = min(c, corr[j, l] * corr[l, k])
    return c


MODELS = {
    "gaussian": dict(
        sample=lambda k, g, n: _std_gaussian(k, g, n, EDGE_R),
        fit=lambda x, d: pc_tree(x, ci_test="fisherz", alpha=0.05 / d**2),
        signal=gaussian_signal,
    ),
    "bernoulli": dict(
        sample=lambda k, g, n: sample_bernoulli(k, g, n, BERN_STRENGTH),
        fit=lambda x, d: pc_tree(x, ci_test="bernoulli", alpha=0.05 / d**2),
        signal=bernoulli_signal,
    ),
    "nonparametric": dict(
        sample=lambda k, g, n: sample_nonlinear(k, g, n),
        # separator bins: pc_tree's default, default_cond_bins(n, 3) = max(3, round(sqrt(n) / 5))
        fit=lambda x, d: pc_tree(x, ci_test=Nonparametric(num_bins=NP_BINS), alpha=0.05 / d**2),
        signal=None,
    ),
}


def _grid(quick: bool):
    if quick:
        reps = 10
        g = {
            # factor-2 grids, refined to sqrt(2) steps where the curves rise (n* is interpolated there)
            "gaussian": ((8, 32, 128), [50, 100, 141, 200, 283, 400, 800]),
            "bernoulli": ((8, 32, 128), [200, 400, 566, 800, 1131, 1600, 3200]),
            "nonparametric": ((8, 32), [300 * 2**i for i in range(5)]),  # 300 .. 4800
        }
    else:
        reps = 20  # ~15 min on 2 cores (nonparametric d=64 at n=9600: ~5 s per replicate)
        f = 2**0.5
        g = {
            "gaussian": ((8, 32, 128, 512), [int(25 * f**i) for i in range(11)]),  # 25 .. 800
            "bernoulli": ((8, 32, 128), [int(100 * f**i) for i in range(15)]),  # 100 .. 12800
            "nonparametric": ((8, 16, 32, 64), [int(300 * f**i) for i in range(11)]),  # 300 .. 9600
        }
    return g, reps


def run(quick: bool = True, outdir: pathlib.Path | None = None, verbose: bool = False) -> list[dict]:
    outdir = pathlib.Path(outdir or pathlib.Path(__file__).resolve().parent / "out")
    outdir.mkdir(parents=True, exist_ok=True)
    rows = _sweep(quick, verbose)
    _plot(rows, outdir / "polyforest_rates.png")
    return rows


def _sweep(quick: bool, verbose: bool) -> list[dict]:
    grid, reps = _grid(quick)
    rows = []
    key = jax.random.key(2026)
    rng = np.random.default_rng(2026)
    for model, (ds, ns) in grid.items():
        spec = MODELS[model]
        for d in ds:
            t0 = time.perf_counter()
            dags_np = [bounded_polytree(rng, d) for _ in range(reps)]
            c = float(np.mean([spec["signal"](g) for g in dags_np[:4]])) if spec["signal"] else math.nan
            dags = [jnp.asarray(g) for g in dags_np]
            truth = [dag_to_cpdag(g) for g in dags]
            keys = [jax.random.fold_in(key, 1_000_003 * d + 7919 * i + len(model)) for i in range(reps)]
            # one sample of size max(ns) per replicate; smaller n use its prefixes (sliced on the host: a JAX
            # slice would compile one program per (n, d))
            xs = [np.asarray(spec["sample"](k, g, max(ns))) for k, g in zip(keys, dags)]
            t_sample = time.perf_counter() - t0
            for n in ns:
                t0 = time.perf_counter()
                graphs = [spec["fit"](x[:n], d).graph for x in xs]
                ok = [bool(exact_recovery(g, t)) for g, t in zip(graphs, truth)]
                s = [int(shd(g, t)) for g, t in zip(graphs, truth)]
                rows.append({"model": model, "d": d, "n": n, "n_over_logd": n / math.log(d), "c": c,
                             "recovery": float(np.mean(ok)), "shd": float(np.mean(s)),
                             "seconds": time.perf_counter() - t0 + t_sample})
                t_sample = 0.0
                if verbose:
                    print(f"  {model} d={d} n={n}: recovery {rows[-1]['recovery']:.2f} SHD {rows[-1]['shd']:.2f} "
                          f"({rows[-1]['seconds']:.1f} s)", flush=True)
    return rows


def n_star(rows, model, d, level=0.5):
    """n at which exact recovery first reaches ``level`` (linear interpolation in log n; inf if never)."""
    rr = sorted((r for r in rows if r["model"] == model and r["d"] == d), key=lambda r: r["n"])
    prev = None
    for r in rr:
        if r["recovery"] >= level:
            if prev is None or prev["recovery"] >= level:
                return float(r["n"])
            t = (level - prev["recovery"]) / (r["recovery"] - prev["recovery"])
            return float(math.exp(math.log(prev["n"]) + t * (math.log(r["n"]) - math.log(prev["n"]))))
        prev = r
    return math.inf


def _plot(rows, path):
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(2, len(models), figsize=(5 * len(models), 8), squeeze=False)
    for col, model in enumerate(models):
        for d in sorted({r["d"] for r in rows if r["model"] == model}):
            rr = [r for r in rows if r["model"] == model and r["d"] == d]
            axes[0, col].plot([r["n"] for r in rr], [r["recovery"] for r in rr], "o-", label=f"d={d}")
            axes[1, col].plot([r["n_over_logd"] for r in rr], [r["recovery"] for r in rr], "o-", label=f"d={d}")
        axes[0, col].set_title(f"{model} poly-trees: exact recovery vs n")
        axes[0, col].set_xlabel("n")
        axes[1, col].set_title(f"{model}: vs n / log d (collapse)")
        axes[1, col].set_xlabel("n / log d")
        for ax in axes[:, col]:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_ylabel("P(exact CPDAG recovery)")
            ax.set_ylim(-0.05, 1.05)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_table(rows):
    print(f"{'model':14s} {'d':>4s} {'n':>6s} {'n/logd':>8s} {'c_min':>6s} {'recovery':>8s} {'SHD':>6s} {'s':>6s}")
    for r in rows:
        c = "" if math.isnan(r["c"]) else f"{r['c']:.3f}"
        print(f"{r['model']:14s} {r['d']:4d} {r['n']:6d} {r['n_over_logd']:8.1f} {c:>6s} {r['recovery']:8.2f} "
              f"{r['shd']:6.2f} {r['seconds']:6.1f}")


def summarize(rows) -> list[dict]:
    out = []
    for model in dict.fromkeys(r["model"] for r in rows):
        ds = sorted({r["d"] for r in rows if r["model"] == model})
        for d in ds:
            last = max((r for r in rows if r["model"] == model and r["d"] == d), key=lambda r: r["n"])
            out.append({
                "claim": f"{model} d={d}: pc_tree recovers the CPDAG exactly at the largest n",
                "measured": f"recovery {last['recovery']:.2f} (SHD {last['shd']:.2f}) at n={last['n']}",
                "expected": ">= 0.9",
                "ok": last["recovery"] >= 0.9,
            })
        stars = {d: n_star(rows, model, d) for d in ds}
        per_log = {d: v / math.log(d) for d, v in stars.items()}
        finite = [v for v in per_log.values() if math.isfinite(v)]
        spread = max(finite) / min(finite) if len(finite) == len(per_log) and finite else math.inf
        per_d = [v / d for d, v in stars.items()]
        spread_d = max(per_d) / min(per_d) if all(map(math.isfinite, per_d)) else math.inf
        out.append({
            "claim": f"{model}: n* (50% recovery) grows like log d -- n*/log d collapses across d={ds}",
            "measured": ", ".join(f"d={d}: n*={stars[d]:.0f}, n*/log d={per_log[d]:.0f}" for d in ds)
            + f"; spread max/min of n*/log d = {spread:.2f} (of n*/d: {spread_d:.1f})",
            "expected": f"spread of n*/log d <= 2 while d grows {ds[-1] // ds[0]}x",
            "ok": spread <= 2.0,
        })
    return out


def tour(outdir: pathlib.Path) -> list[dict]:
    """Quick-scale run for ``examples/tour.py``: summary rows (claim, measured, expected, ok)."""
    return summarize(run(quick=True, outdir=outdir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--outdir", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent / "out")
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = run(quick=args.quick, outdir=args.outdir, verbose=True)
    print_table(rows)
    print()
    for s in summarize(rows):
        print(f"[{'ok' if s['ok'] else 'MISS'}] {s['claim']}: {s['measured']} (expected {s['expected']})")
    print(f"figure: {args.outdir / 'polyforest_rates.png'}; total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
