"""Fisher-z PC at thousands of variables: time, peak memory and SHD on sparse random linear-Gaussian DAGs.

Each size runs in a fresh subprocess (so its peak resident memory is its own, read from ``getrusage``): an
Erdős–Rényi DAG with the given expected degree, ``n`` samples of the linear-Gaussian model
(:func:`icmlx.structure.sample_linear_gaussian`), then ``pc(x, ci_test="fisherz", alpha)`` timed as one call
(compilation included: a user's single run; wall and CPU seconds) and the SHD of its CPDAG to the true CPDAG.
causal-learn's PC-stable (same test, alpha and collider rule) runs beside it up to ``--cl-max-d`` variables, and
its CPDAG is compared.

Separating sets are stored per removed edge (``PCResult.sepset_members``) and each level is built in chunks of
at most ``2^22`` tests, so memory follows the edges and tests, not ``d^3``.

High-cardinality discrete data (rows with ``case = "highcard"``): χ² PC (alpha 0.05, PC-stable, collider
priority 3, x64) beside causal-learn's on a network shaped like pgmpy's ``mildew`` (35 variables with mildew's
cardinalities, 3 to 100 states; a random DAG of 46 arcs with at most three parents; banded CPTs in which a child's
state follows its parents' mean state, as in mildew's discretised quantities), or on a BIF file (``--bif
mildew.bif``). icmlx's first call (compilation included) and its steady state (second call) are timed apart;
each library runs in its own subprocess, so each peak resident memory is its own.

    python benchmarks/structure_scale.py                       # d = 100 (with causal-learn), 500, 1000
    python benchmarks/structure_scale.py --d 500 1000 2000 5000 --cl-max-d 0
    python benchmarks/structure_scale.py --highcard-only --highcard-n 5000 20000 [--bif mildew.bif]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def one(d: int, n: int, degree: float, alpha: float, seed: int, with_cl: bool) -> dict:
    import resource

    import jax
    import numpy as np

    from icmlx.structure import dag_to_cpdag, pc, random_er_dag, sample_linear_gaussian, shd

    t0 = time.perf_counter()
    dag = random_er_dag(jax.random.key(seed), d, expected_degree=degree)
    x = np.asarray(sample_linear_gaussian(jax.random.key(seed + 1), dag, n))
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    res = pc(x, ci_test="fisherz", alpha=alpha)
    jax.block_until_ready(res.graph)
    t_pc = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    truth = dag_to_cpdag(dag)
    row = {
        "d": d, "n": n, "expected_degree": degree, "alpha": alpha,
        "true_edges": int(np.asarray(dag).sum()), "found_edges": int(np.asarray(res.skeleton).sum()) // 2,
        "num_tests": int(res.num_tests), "sepset_rows": int(res.sepset_members.shape[0]),
        "icmlx_s": t_pc, "icmlx_cpu_s": cpu, "data_s": t_data, "shd_icmlx": int(shd(res.graph, truth)),
        "peak_rss_gb_icmlx": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    if with_cl:
        from causallearn.search.ConstraintBased.PC import pc as cl_pc

        t0 = time.perf_counter()
        cg = cl_pc(x.astype(np.float64), alpha, "fisherz", True, 0, 2, show_progress=False)
        row["causal_learn_s"] = time.perf_counter() - t0
        row["speedup"] = row["causal_learn_s"] / t_pc
        row["agree"] = bool((cg.G.graph == np.asarray(res.graph)).all())
        row["shd_causal_learn"] = int(shd(cg.G.graph, truth))
    return row


#: the cardinalities of pgmpy's mildew network (35 variables)
MILDEW_CARDS = [3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 7, 8, 8, 8, 9, 9, 9, 9, 20, 20, 28, 32, 33,
                61, 86, 100, 100]


def mildew_like(seed: int):
    """A discrete network with mildew's cardinalities and arc count (`_bn_networks.Network`)."""
    from _bn_networks import Network

    rng = np.random.default_rng(seed)
    d = len(MILDEW_CARDS)
    cards = rng.permutation(MILDEW_CARDS)
    parents: list[tuple[int, ...]] = [() for _ in range(d)]
    arcs = 0
    while arcs < 46:
        v = int(rng.integers(1, d))
        p = int(rng.integers(0, v))
        if p not in parents[v] and len(parents[v]) < 3:
            parents[v] = (*parents[v], p)
            arcs += 1
    cpts = []
    for v in range(d):
        k = int(cards[v])
        shape = tuple(int(cards[p]) for p in parents[v])
        grids = np.meshgrid(*[np.linspace(0, 1, c) for c in shape], indexing="ij") if shape else []
        centre = (sum(grids) / len(grids) if grids else np.full((), 0.5)) * (k - 1)
        width = max(k / 8, 0.6)
        logits = -0.5 * ((np.arange(k) - centre[..., None]) / width) ** 2
        cpt = np.exp(logits) + 1e-3
        cpts.append(cpt / cpt.sum(-1, keepdims=True))
    return Network(tuple(f"V{j}" for j in range(d)), tuple(tuple(map(str, range(int(c)))) for c in cards),
                   tuple(parents), tuple(cpts))


def one_highcard(n: int, seed: int, lib: str, bif: str | None) -> dict:
    import resource

    from _bn_networks import read_bif, sample

    net = read_bif(bif) if bif else mildew_like(seed)
    x = sample(net, n, seed=seed + 1)
    row = {"case": "highcard", "network": Path(bif).stem if bif else "mildew-like", "n": n, "d": x.shape[1],
           "max_card": int(x.max() + 1)}
    if lib == "icmlx":
        import jax

        jax.config.update("jax_enable_x64", True)
        from icmlx.structure import SepsetColliders, pc

        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            res = pc(x, ci_test="chisq", alpha=0.05, colliders=SepsetColliders(priority=3))
            graph = np.asarray(res.graph)
            times.append(time.perf_counter() - t0)
        row.update(icmlx_first_s=times[0], icmlx_s=times[1], num_tests=int(res.num_tests), graph=graph.tolist(),
                   peak_rss_gb_icmlx=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    else:
        from causallearn.search.ConstraintBased.PC import pc as cl_pc

        t0 = time.perf_counter()
        cg = cl_pc(x.astype(np.float64), 0.05, "chisq", True, 0, -1, show_progress=False)
        row.update(causal_learn_s=time.perf_counter() - t0, graph=np.asarray(cg.G.graph).tolist(),
                   peak_rss_gb_causal_learn=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    return row


def highcard_rows(sizes, seed: int, bif: str | None) -> list[dict]:
    rows = []
    for n in sizes:
        got = {}
        for lib in ("icmlx", "causal-learn"):
            cmd = [sys.executable, __file__, "--one-highcard", str(n), lib, "--seed", str(seed)]
            cmd += ["--bif", bif] if bif else []
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                got["error"] = f"{lib}: " + out.stderr.strip().splitlines()[-1][:300]
                continue
            got[lib] = json.loads(out.stdout.strip().splitlines()[-1])
        row = {**got.get("icmlx", {}), **got.get("causal-learn", {}), **({"error": got["error"]} if "error" in got
                                                                         else {})}
        if "icmlx" in got and "causal-learn" in got:
            row["agree"] = got["icmlx"]["graph"] == got["causal-learn"]["graph"]
            row["speedup"] = row["causal_learn_s"] / row["icmlx_s"]
            row["speedup_first"] = row["causal_learn_s"] / row["icmlx_first_s"]
        row.pop("graph", None)
        rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, nargs="+", default=[100, 500, 1000])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--degree", type=float, default=2.5)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cl-max-d", type=int, default=100, help="run causal-learn up to this d (0: never)")
    ap.add_argument("--highcard-n", type=int, nargs="*", default=[5000],
                    help="sample sizes of the high-cardinality chi-square case (none: skip it)")
    ap.add_argument("--highcard-only", action="store_true", help="run only the high-cardinality case")
    ap.add_argument("--bif", help="a BIF file (e.g. mildew.bif) instead of the mildew-like network")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--one-highcard", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.one, args.n, args.degree, args.alpha, args.seed, args.one <= args.cl_max_d)))
        return
    if args.one_highcard is not None:
        print(json.dumps(one_highcard(int(args.one_highcard[0]), args.seed, args.one_highcard[1], args.bif)))
        return
    from _harness import RESULTS_DIR, print_table, write_results

    hc_cols = ["network", "n", "d", "max_card", "num_tests", "icmlx_first_s", "icmlx_s", "causal_learn_s", "speedup",
               "speedup_first", "peak_rss_gb_icmlx", "peak_rss_gb_causal_learn", "agree", "error"]
    if args.highcard_only:  # replace the high-cardinality rows, keep the Fisher-z ones
        try:
            kept = [r for r in json.loads((RESULTS_DIR / "structure_scale.json").read_text())["rows"]
                    if r.get("case") != "highcard"]
        except (OSError, ValueError, KeyError):
            kept = []
        hc = highcard_rows(args.highcard_n, args.seed, args.bif)
        print_table(hc, [c for c in hc_cols if any(c in r for r in hc)], title="chi-square PC, high cardinality")
        path = write_results("structure_scale", kept + hc, extra={"command": " ".join(["python", *sys.argv])})
        print(f"wrote {path}")
        return

    rows = []
    for d in args.d:
        cmd = [sys.executable, __file__, "--one", str(d), "--n", str(args.n), "--degree", str(args.degree),
               "--alpha", str(args.alpha), "--seed", str(args.seed), "--cl-max-d", str(args.cl_max_d)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            rows.append({"d": d, "error": out.stderr.strip().splitlines()[-1][:300]})
        else:
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print_table(rows[-1:])
        write_results("structure_scale", rows, extra={"command": " ".join(["python", *sys.argv])})  # row by row
    cols = ["d", "n", "true_edges", "found_edges", "num_tests", "icmlx_s", "icmlx_cpu_s", "peak_rss_gb_icmlx",
            "shd_icmlx", "causal_learn_s", "speedup", "agree", "shd_causal_learn", "error"]
    print_table(rows, [c for c in cols if any(c in r for r in rows)], title="Fisher-z PC at scale")
    if args.highcard_n:
        hc = highcard_rows(args.highcard_n, args.seed, args.bif)
        print_table(hc, [c for c in hc_cols if any(c in r for r in hc)], title="chi-square PC, high cardinality")
        rows += hc
    path = write_results("structure_scale", rows, extra={"command": " ".join(["python", *sys.argv])})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
