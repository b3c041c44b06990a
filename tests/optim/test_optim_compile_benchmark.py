"""The operation count of ``benchmarks/optim_compile.py`` (equations of nested jaxprs included), on programs whose
equations are counted by hand."""

import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
try:
    from optim_compile import _count_eqns, model_shapes
finally:
    sys.path.pop(0)


def test_count_eqns_includes_scan_and_cond_bodies():
    # scan: the scan itself + mul, add in its body
    scan = jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, _: (c * 2.0 + 1.0, None), x, None, length=3)[0])
    assert _count_eqns(scan(jnp.ones(3)).jaxpr) == 3
    # cond: reduce_sum, gt, convert_element_type, cond + one equation in each branch (neg; mul)
    cond = jax.make_jaxpr(lambda x: jax.lax.cond(x.sum() > 0, lambda y: y * 2.0, lambda y: -y, x))
    assert _count_eqns(cond(jnp.ones(3)).jaxpr) == 6


def test_model_shapes_match_the_suite_models():
    # the suite's MLP 64-64-10 with biases and the char-LM 16 x 16 -> 128 -> 128 with a 128 x 16 embedding
    assert sum(math.prod(s) for s in model_shapes("mlp").values()) == 64 * 64 + 64 + 64 * 10 + 10
    lm = model_shapes("char-lm")
    assert lm["w1"] == (256, 128) and lm["emb"] == (128, 16) and lm["w2"] == (128, 128)
