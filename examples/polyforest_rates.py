"""Sample complexity of poly-forest learning (Gao, Wang & Aragam, ICML 2026, arXiv:2507.05689).

The paper's message: for poly-forests, structure learning is exactly as hard as the CI test it uses. The PC-tree
learner (conditioning sets of size <= 1, every node a candidate separator, calibrated cut) recovers the CPDAG once
``n >~ log d / c^alpha``, where ``c`` is the signal strength of the CI tester (Gaussian: minimum |partial
correlation|, alpha = 2). Holding ``c`` fixed, the sample size ``n*`` needed for exact recovery therefore grows like
``log d``: recovery curves plotted against ``n / log d`` collapse across ``d`` (up to a constant factor).

To hold ``c`` fixed as ``d`` grows, the poly-trees here have in-degree <= 2 (a random recursive tree whose edges are
oriented at random, re-oriented where a node already has two parents), and

* Gaussian: every variable has unit variance and every edge weight is ``±r`` (the noise variance of a node is
  ``1 - sum of its squared parent weights``; parents in a poly-tree are independent), so every edge's correlation is
  ``±r`` and the signal ``c`` of the tests PC-tree needs (edges given any single node; pairs two steps apart through
  a non-collider, which must test dependent to avoid a false v-structure: ``r^2``) is the same for every ``d``
  (printed as ``c_min``);
* Bernoulli: ``icmlx.structure.sample_bernoulli`` (P(x=1|pa) = 1/2 ± strength, averaged over <= 2 parents);
* nonparametric: ``icmlx.structure.sample_nonlinear`` (tanh additive noise) with the binned U-statistic and a fixed
  calibrated threshold.

The Gaussian and Bernoulli testers use the level ``alpha = 0.05 / d^2`` (a union bound over the ~d^3 tests), the
nonparametric tester a fixed threshold; both give ``n* = a log d + b``. The check is the rate, stated fairly: the
ratio ``max_d / min_d`` of ``n* / log d`` (``n*`` = sample size at 50% exact recovery, interpolated on the log-n grid)
stays below 2 while ``d`` grows 16x (``n*`` itself, or ``n* / d``, would not collapse).

Usage::

    python examples/polyforest_rates.py --quick     # a few minutes on 2 idle CPU cores
    python examples/polyforest_rates.py             # more replicates, finer grid
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
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from icmlx.structure import (  # noqa: E402
    dag_to_cpdag,
    exact_recovery,
    pc_tree,
    sample_bernoulli,
    sample_nonlinear,
    shd,
)

EDGE_R = 0.6  # Gaussian edge correlation |r| (2 r^2 < 1 for in-degree 2)
NP_THRESHOLD, NP_BINS = 0.004, 3  # nonparametric: fixed threshold on the binned U-statistic


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


MODELS = {
    "gaussian": dict(sample=lambda k, g, n: _std_gaussian(k, g, n, EDGE_R), kw=dict(ci_test="fisherz")),
    "bernoulli": dict(sample=lambda k, g, n: sample_bernoulli(k, g, n, 0.35), kw=dict(ci_test="bernoulli")),
    "nonparametric": dict(sample=lambda k, g, n: sample_nonlinear(k, g, n),
                          kw=dict(ci_test="nonparametric", threshold=NP_THRESHOLD, n_bins=NP_BINS)),
}


@functools.partial(jax.jit, static_argnames=("n", "model"))
def _recovery(key, dags, *, n, model):
    spec = MODELS[model]
    d = dags.shape[1]
    kw = dict(spec["kw"])
    if "threshold" not in kw:
        kw["alpha"] = 0.05 / d**2

    def one(k, dag):
        x = spec["sample"](k, dag, n)
        g = pc_tree(x, **kw).graph
        truth = dag_to_cpdag(dag)
        return exact_recovery(g, truth), shd(g, truth)

    ok, s = jax.vmap(one)(jax.random.split(key, dags.shape[0]), dags)
    return jnp.mean(ok.astype(jnp.float32)), jnp.mean(s.astype(jnp.float32))


def _grid(quick: bool):
    if quick:
        reps = 10
        g = {
            "gaussian": ((8, 32, 128), [25 * 2**i for i in range(6)]),  # 25 .. 800
            "bernoulli": ((8, 32, 128), [50 * 2**i for i in range(6)]),  # 50 .. 1600
            "nonparametric": ((8, 32), [300 * 2**i for i in range(5)]),  # 300 .. 4800
        }
    else:
        reps = 48
        f = 2**0.5
        g = {
            "gaussian": ((8, 32, 128, 512), [int(20 * f**i) for i in range(13)]),
            "bernoulli": ((8, 32, 128), [int(50 * f**i) for i in range(13)]),
            "nonparametric": ((8, 32, 64), [int(250 * f**i) for i in range(11)]),
        }
    return g, reps


def run(quick: bool = True, outdir: pathlib.Path | None = None, verbose: bool = False) -> list[dict]:
    outdir = pathlib.Path(outdir or pathlib.Path(__file__).resolve().parent / "out")
    outdir.mkdir(parents=True, exist_ok=True)
    grid, reps = _grid(quick)
    rows = []
    key = jax.random.key(2026)
    rng = np.random.default_rng(2026)
    for model, (ds, ns) in grid.items():
        for d in ds:
            dags_np = np.stack([bounded_polytree(rng, d) for _ in range(reps)])
            c = float(np.mean([gaussian_signal(g) for g in dags_np[:4]])) if model == "gaussian" else math.nan
            dags = jnp.asarray(dags_np)
            for n in ns:
                t0 = time.perf_counter()
                rec, s = _recovery(jax.random.fold_in(key, 7919 * d + n), dags, n=n, model=model)
                rows.append({"model": model, "d": d, "n": n, "n_over_logd": n / math.log(d), "c": c,
                             "recovery": float(rec), "shd": float(s), "seconds": time.perf_counter() - t0})
                if verbose:
                    print(f"  {model} d={d} n={n}: recovery {float(rec):.2f} SHD {float(s):.2f} "
                          f"({rows[-1]['seconds']:.1f} s)", flush=True)
    _plot(rows, outdir / "polyforest_rates.png")
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
