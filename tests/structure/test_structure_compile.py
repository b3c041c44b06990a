"""Compile once: how many XLA programs a one-shot PC call compiles, and that a new ``n`` (same ``d``) compiles none.

The rule (``_contingency.pad_samples``): after a first call with ``n`` samples, a call with any ``n'`` in
``[n/2, 2n]`` reuses every program, including an ``n'`` on the other side of a power of four; Fisher-z's
correlation is computed on the host for small data, so its kernel does not depend on ``n`` at all. ``pc_tree``
follows the same rule (Fisher-z scores from the correlation matrix, Bernoulli counts on a padded sample axis); its
nonparametric tester compiles its counts again for a new ``n`` (the strata sizes are static) but not its p-values.

Counted in a fresh interpreter with the persistent compilation cache off (every program is then a backend
compilation, reported through ``jax.monitoring``), so the counts do not depend on what other tests compiled.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

_SCRIPT = r"""
import json, logging, re, sys
import numpy as np
import jax
from jax import monitoring

names = []
class _Names(logging.Handler):
    def emit(self, rec):
        m = re.match(r"Compiling (\S+) with global shapes", rec.getMessage())
        if m:
            names.append(m.group(1))
jax.config.update("jax_log_compiles", True)
for lg in ("jax._src.interpreters.pxla", "jax._src.dispatch"):
    logger = logging.getLogger(lg)
    logger.addHandler(_Names())
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
count = [0]
monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: count.__setitem__(0, count[0] + 1) if e.endswith("backend_compile_duration") else None
)
from icmlx.structure import pc, pc_tree

rng = np.random.default_rng(2)
n, d = 1100, 6
cards = [5, 4, 5, 4, 5, 4]
disc = np.zeros((n, d), np.int64)  # a chain, each variable a noisy copy of its parent
disc[:, 0] = rng.integers(0, cards[0], n)
for j in range(1, d):  # a strong chain: every size finds the same graph, so the same levels and plans run
    disc[:, j] = np.where(rng.random(n) < 0.8, disc[:, j - 1] % cards[j], rng.integers(0, cards[j], n))
rng = np.random.default_rng(0)
gauss = np.zeros((n, d))
gauss[:, 0] = rng.standard_normal(n)
for j in range(1, d):
    gauss[:, j] = 0.8 * gauss[:, j - 1] + rng.standard_normal(n)
out = {}
for test, data in (("chisq", disc), ("fisherz", gauss)):
    # 700 first; then 1100 and 300, on the other side of the powers of four 1024 and 256
    for m in (700, 1100, 300):
        before, k0 = count[0], len(names)
        r = pc(data[:m], ci_test=test, alpha=0.05)
        np.asarray(r.skeleton)
        out[f"{test}_{m}"] = {"programs": count[0] - before, "names": names[k0:],
                              "skeleton": np.asarray(r.skeleton).astype(int).tolist()}
for test, data in (("fisherz", gauss), ("bernoulli", (gauss > 0).astype(np.int64))):
    for m in (700, 1100, 300):  # pc_tree: Fisher-z from the correlation matrix, Bernoulli on a padded sample axis
        before, k0 = count[0], len(names)
        np.asarray(pc_tree(data[:m], ci_test=test).graph)
        out[f"tree_{test}_{m}"] = {"programs": count[0] - before, "names": names[k0:]}
if "nonparametric" in sys.argv[1:]:  # new strata sizes, so the counts compile again, but not the p-values
    for m in (700, 1100):
        before, k0 = count[0], len(names)
        np.asarray(pc_tree(gauss[:m], ci_test="nonparametric", alpha=0.01).graph)
        out[f"tree_nonparametric_{m}"] = {"programs": count[0] - before, "names": names[k0:]}
print(json.dumps(out))
"""

# Bounds on the programs of a one-shot call in a fresh process: the CI-test kernels (χ²: the one dense table
# kernel for every table size, p-values on the host; bitset counting only for batches of 32768+ tests; the
# per-sample kernels only for tables past 2^17 cells; Fisher-z: one kernel for |S| <= 4, the correlation on the
# host). The result record is built with jax.device_put, which compiles nothing. Earlier testers compiled 24
# (χ², this data) and 22 (Fisher-z) here.
MAX_PROGRAMS = {"chisq": 1, "fisherz": 1}


def _run(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("ICMLX_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR")}
    env["ICMLX_CACHE"] = "0"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, *args], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def compiled():
    return _run()


@pytest.mark.parametrize("test", ["chisq", "fisherz"])
def test_one_shot_pc_compiles_few_programs(compiled, test):
    got = compiled[f"{test}_700"]
    assert 0 < got["programs"] <= MAX_PROGRAMS[test], got["names"]


@pytest.mark.parametrize("test", ["chisq", "fisherz"])
@pytest.mark.parametrize("m", [1100, 300])
def test_new_n_same_d_compiles_nothing(compiled, test, m):
    assert compiled[f"{test}_{m}"]["programs"] == 0, compiled[f"{test}_{m}"]["names"]


@pytest.mark.parametrize("test", ["fisherz", "bernoulli"])
@pytest.mark.parametrize("m", [1100, 300])
def test_pc_tree_new_n_same_d_compiles_nothing(compiled, test, m):
    assert compiled[f"tree_{test}_700"]["programs"] > 0  # (the counter sees this process's compilations)
    assert compiled[f"tree_{test}_{m}"]["programs"] == 0, compiled[f"tree_{test}_{m}"]["names"]


@pytest.mark.slow
def test_pc_tree_nonparametric_new_n_compiles_only_the_counts():
    # the strata sizes depend on n, the p-value program (the incomplete gamma function) only on d
    compiled = _run("nonparametric")
    first, second = compiled["tree_nonparametric_700"], compiled["tree_nonparametric_1100"]
    assert any("_np_min_pvalues" in s for s in first["names"]), first["names"]
    assert second["programs"] == 1 and "_np_stats" in second["names"][0], second["names"]


def test_padded_sample_axis_gives_the_unpadded_statistics():
    # chi_square pads the sample axis to a bucket and masks the padding: compare with SciPy on each stratum
    stats = pytest.importorskip("scipy.stats")
    import jax.numpy as jnp

    from icmlx.structure import chi_square

    rng = np.random.default_rng(3)
    n = 301  # not a multiple of 32: the last bitset word and the last scatter chunk are partly padding
    x = rng.integers(0, 3, size=(n, 4))
    x[:, 1] = np.where(rng.random(n) < 0.5, x[:, 0], x[:, 1])
    for s in ([], [2], [2, 3]):
        res = chi_square(jnp.asarray(x, jnp.int32), jnp.array([0]), jnp.array([1]), jnp.array([s], jnp.int32))
        chi, dof = 0.0, 0
        keys = [tuple(r) for r in x[:, s]] if s else [()] * n
        for key in set(keys):
            rows = x[[k == key for k in keys]]
            tab = np.zeros((3, 3))
            np.add.at(tab, (rows[:, 0], rows[:, 1]), 1)
            tab = tab[tab.sum(1) > 0][:, tab.sum(0) > 0]
            if min(tab.shape) > 1:
                chi += stats.chi2_contingency(tab, correction=False)[0]
                dof += (tab.shape[0] - 1) * (tab.shape[1] - 1)
        assert int(res.dof[0]) == dof, s
        np.testing.assert_allclose(float(res.statistic[0]), chi, rtol=2e-5)


@pytest.mark.parametrize("on_host", [True, False])
def test_shared_correlation_matrix_matches_numpy(monkeypatch, on_host):
    # pc and pc_tree's Fisher-z correlation: the host product for small data, the device program on a bucketed
    # sample axis past HOST_CORRELATION_FLOPS (forced here); both against NumPy's float64 corrcoef, identity past d
    from icmlx.structure._citests import _fisher_padded

    if not on_host:
        monkeypatch.setattr(_fisher_padded, "HOST_CORRELATION_FLOPS", 0)
    rng = np.random.default_rng(4)
    n, d, dp = 301, 5, 16
    x = rng.normal(size=(n, d))
    x[:, 1] += x[:, 0]
    x *= np.array([1e-20, 1.0, 3e15, 7.0, 1e-3])  # scale-free: any column scale fits in float32
    got = np.asarray(_fisher_padded.correlation_matrix(x, dp, np.float32))
    assert got.shape == (dp, dp) and got.dtype == np.float32
    np.testing.assert_allclose(got[:d, :d], np.corrcoef(x, rowvar=False), rtol=0, atol=2e-6)
    np.testing.assert_array_equal(got[d:, :], np.eye(dp)[d:, :])
    np.testing.assert_array_equal(got[:, d:], np.eye(dp)[:, d:])
