"""χ² counting plans: the dense ``(strata, K, K)`` scatter against AND + popcount bitsets, on the same tests.

``icmlx.structure.chi_square`` counts small contingency tables with the dense plan by default; the bitset plan is an
opt-in alternative (``icmlx.structure._citests._contingency.BITS_MIN_TESTS``). This script decides that default:
for each case (categories per variable, conditioning-set size) it draws ``--tests`` random triples over 30 uniform
categorical variables with ``n = 10^4`` samples, checks that both plans give the same statistics and degrees of
freedom, and then times them alternately in one process (first call apart, medians of ``--repeats`` steady calls
on fresh triples), so load falls on both sides. The persistent compilation cache is off, so first calls compile.

Usage: ``python benchmarks/structure_chi2_plans.py`` (about 2 minutes on 2 CPU cores).
"""

import argparse
import os
import sys
import time

os.environ["ICMLX_CACHE"] = "0"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import icmlx.structure._citests._contingency as ct  # noqa: E402
from _harness import print_table, write_results  # noqa: E402
from icmlx.structure import chi_square  # noqa: E402

D = 30
N = 10_000
CASES = [(2, 2), (3, 1), (2, 3), (4, 0)]  # (categories, |S|): flat tables of 16-64 cells, all bitset-eligible


def use(plan: str) -> None:
    ct.BITS_MIN_TESTS = 0 if plan == "bits" else None  # every qualifying test takes bitsets / none does


def triples(num: int, k: int, seed: int):
    a = np.argsort(np.random.default_rng(seed).random((num, D)), axis=1)[:, :k + 2]
    return tuple(jnp.asarray(c, jnp.int32) for c in (a[:, 0], a[:, 1], a[:, 2:]))


def timed(x, tr):
    t = time.perf_counter()
    out = chi_square(x, *tr)
    jax.block_until_ready(out.statistic)
    return out, time.perf_counter() - t


def run_case(card: int, k: int, num: int, repeats: int) -> dict:
    x = jnp.asarray(np.random.default_rng(0).integers(0, card, size=(N, D)), jnp.int32)
    tr = triples(num, k, 1)
    first, outs = {}, {}
    for plan in ("dense", "bits"):
        use(plan)
        outs[plan], first[plan] = timed(x, tr)
    np.testing.assert_array_equal(np.asarray(outs["bits"].dof), np.asarray(outs["dense"].dof))
    np.testing.assert_allclose(np.asarray(outs["bits"].statistic), np.asarray(outs["dense"].statistic), rtol=1e-4)
    ts = {"dense": [], "bits": []}
    for r in range(repeats):
        tr = triples(num, k, 2 + r)
        for plan in (("bits", "dense") if r % 2 else ("dense", "bits")):
            use(plan)
            ts[plan].append(timed(x, tr)[1])
    st = {p: float(np.median(v)) for p, v in ts.items()}
    return dict(card=card, cond_size=k, tests=num, dense_us_per_test=st["dense"] / num * 1e6,
                bits_us_per_test=st["bits"] / num * 1e6, bits_over_dense=st["bits"] / st["dense"],
                dense_first_s=first["dense"], bits_first_s=first["bits"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=32768)
    ap.add_argument("--repeats", type=int, default=6)
    args = ap.parse_args()
    default = ct.BITS_MIN_TESTS
    try:
        rows = [run_case(c, k, args.tests, args.repeats) for c, k in CASES]
    finally:
        ct.BITS_MIN_TESTS = default
    print_table(rows, title=f"chi_square counting plans, n = {N}, {args.tests} tests per batch (steady medians)")
    name = "structure_chi2_plans"
    print("wrote", write_results(name, rows, extra={"n": N, "num_variables": D}))


if __name__ == "__main__":
    main()
