"""The benchmarks' bnlearn network reader and sampler (benchmarks/_bn_networks.py), and PC on its samples.

The parser and sampler are checked on a small network written here, against closed-form marginals; alarm and
insurance (bnlearn repository BIF files, not in the repository) are checked when ``$ICMLX_BN_NETWORKS`` names a
folder holding them.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _bn_networks as bn  # noqa: E402

# A -> C <- B, B -> D; C's parents listed (B, A) so that the CPT axes follow the file, not the variable order
TOY = """
network toy {
}
variable A {
  type discrete [ 2 ] { a0, a1 };
}
variable B {
  type discrete [ 3 ] { b0, b1, b2 };
}
variable C {
  type discrete [ 2 ] { c0, c1 };
}
variable D {
  type discrete [ 2 ] { d0, d1 };
}
probability ( A ) {
  table 0.3, 0.7;
}
probability ( B ) {
  table 0.2, 0.5, 0.3;
}
probability ( C | B, A ) {
  (b0, a0) 0.9, 0.1;
  (b1, a0) 0.6, 0.4;
  (b2, a0) 0.2, 0.8;
  (b0, a1) 0.5, 0.5;
  (b1, a1) 0.1, 0.9;
  (b2, a1) 0.3, 0.7;
}
probability ( D | B ) {
  (b0) 0.25, 0.75;
  (b1) 0.5, 0.5;
  (b2) 0.95, 0.05;
}
"""

PA, PB = np.array([0.3, 0.7]), np.array([0.2, 0.5, 0.3])
C1 = {(0, 0): 0.1, (1, 0): 0.4, (2, 0): 0.8, (0, 1): 0.5, (1, 1): 0.9, (2, 1): 0.7}  # P(C = c1 | B = b, A = a)
D1 = np.array([0.75, 0.5, 0.05])  # P(D = d1 | B = b)


@pytest.fixture
def toy(tmp_path):
    path = tmp_path / "toy.bif"
    path.write_text(TOY)
    return bn.read_bif(path)


def test_parse_toy(toy):
    assert toy.names == ("A", "B", "C", "D")
    assert toy.card == (2, 3, 2, 2)
    assert sorted(toy.arcs) == [(0, 2), (1, 2), (1, 3)]
    assert toy.parents[2] == (1, 0)
    assert toy.cpt[2][2, 0, 1] == pytest.approx(0.8)  # (B = b2, A = a0) -> c1
    order = toy.order()
    assert all(order.index(p) < order.index(v) for p, v in toy.arcs)


def test_exact_marginal_closed_form(toy):
    c1 = sum(PA[a] * PB[b] * C1[(b, a)] for a in range(2) for b in range(3))
    np.testing.assert_allclose(bn.exact_marginal(toy, 2), [1 - c1, c1], rtol=1e-12)
    np.testing.assert_allclose(bn.exact_marginal(toy, 3), [1 - PB @ D1, PB @ D1], rtol=1e-12)


def test_sample_matches_marginals_and_conditionals(toy):
    n = 40_000
    x = bn.sample(toy, n, seed=3)
    assert x.shape == (n, 4) and x.dtype == np.int64
    np.testing.assert_array_equal(x, bn.sample(toy, n, seed=3))  # fixed seed, same rows
    for v in range(4):
        p = bn.exact_marginal(toy, v)
        emp = np.bincount(x[:, v], minlength=toy.card[v]) / n
        assert np.all(np.abs(emp - p) <= 5 * np.sqrt(p * (1 - p) / n)), (v, emp, p)  # 5 Monte Carlo SE
    for (b, a), q in C1.items():  # a conditional, which a sampler ignoring the parents' order would get wrong
        sel = (x[:, 1] == b) & (x[:, 0] == a)
        assert abs(x[sel, 2].mean() - q) <= 5 * np.sqrt(q * (1 - q) / sel.sum()), (b, a)


def test_text_format_round_trip(toy, tmp_path):
    x = bn.sample(toy, 50, seed=0)
    bn.write_txt(x, tmp_path / "toy.txt")
    lines = (tmp_path / "toy.txt").read_text().splitlines()
    assert lines[0] == "X1 X2 X3 X4"
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "toy.txt", skiprows=1).astype(np.int64), x + 1)


def test_bad_cpt_rejected(tmp_path):
    path = tmp_path / "bad.bif"
    path.write_text(TOY.replace("table 0.3, 0.7;", "table 0.3, 0.6;"))
    with pytest.raises(ValueError, match="sums to"):
        bn.read_bif(path)
    path.write_text(TOY.replace("  (b2) 0.95, 0.05;\n", ""))
    with pytest.raises(ValueError, match="misses rows"):
        bn.read_bif(path)


NETWORKS = os.environ.get("ICMLX_BN_NETWORKS")
SIZES = {"alarm": (37, 46), "insurance": (27, 52)}  # Beinlich et al. 1989; Binder et al. 1997


def _network(name):
    if not NETWORKS or not (Path(NETWORKS) / f"{name}.bif").exists():
        pytest.skip(f"set ICMLX_BN_NETWORKS to a folder holding {name}.bif (https://www.bnlearn.com/bnrepository/)")
    return Path(NETWORKS) / f"{name}.bif"


@pytest.mark.parametrize("name", sorted(SIZES))
def test_bnlearn_network_sizes_and_marginals(name):
    net, x = bn.network_data(_network(name), 10_000, seed=0)
    assert (len(net.names), len(net.arcs)) == SIZES[name]
    z = []
    for v in range(len(net.names)):
        p = bn.exact_marginal(net, v)
        emp = np.bincount(x[:, v], minlength=net.card[v]) / len(x)
        keep = p > 0
        z.append(np.max(np.abs(emp - p)[keep] / np.sqrt(p * (1 - p) / len(x))[keep]))
    assert max(z) < 4.5, max(z)  # about 100 states: the largest of ~100 |z| stays below 4.5


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIZES))
def test_pc_on_bnlearn_sample_matches_causal_learn(name):
    cl = pytest.importorskip("causallearn.search.ConstraintBased.PC")
    from icmlx.structure import pc

    net, x = bn.network_data(_network(name), 10_000, seed=0)
    ours = pc(x + 1, ci_test="chisq", alpha=0.05)
    ref = cl.pc(x + 1, 0.05, "chisq", show_progress=False)  # causal-learn's defaults: stable, uc_rule 0, priority 2
    np.testing.assert_array_equal(np.asarray(ours.graph), ref.G.graph)
    # the skeleton recovers most true arcs (n = 10^4): recall measured 0.96 (alarm) and 0.83 (insurance)
    true = (net.adjacency() + net.adjacency().T) > 0
    sk = np.asarray(ours.skeleton)
    assert (sk & true).sum() / true.sum() >= 0.8
    assert (sk & true).sum() / max(sk.sum(), 1) >= 0.95
