"""The problems both the two-process run and the single-process references solve.

- :func:`dash_problem`: ten DASH steps of a regression. A (24, 20) weight gives ragged blocks at ``block_size=8``
  (stacks of 15 full and 3 partial blocks), so the stacks are padded to a multiple of the device count and
  really split across processes.
- :func:`stats_problem`: ``icmlx.stats.simulate_risk_ratios`` with its replicates split over every device.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from icmlx.optim import scale_by_dash

NUM_STEPS = 10


def dash_problem(mesh, put):
    """``(params, losses, dash_state)`` after :data:`NUM_STEPS` steps; ``put`` places host arrays."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((24, 20)).astype(np.float32)
    x = rng.standard_normal((64, 24)).astype(np.float32)
    y = rng.standard_normal((64, 20)).astype(np.float32)
    kw = {} if mesh is None else {"mesh": mesh, "mesh_axis": "blocks"}
    # a step at which ten steps stay well conditioned in float32: at 0.05 (with the default momentum 0.9) a
    # 2e-7 relative change of w0 moves the final weights by 1.8e-3, at 0.005 by 8e-5 (the first grafted steps are
    # up to 10x the later ones), at 0.001 by 3e-5, so summation order alone would decide whether the sharded and
    # unsharded runs agree at the larger steps
    tx = optax.chain(scale_by_dash(8, precondition_frequency=2, **kw), optax.scale(-0.001))

    def loss(p, x, y):
        return jnp.mean((x @ p["w"] - y) ** 2)

    @jax.jit
    def step(p, s, x, y):
        val, g = jax.value_and_grad(loss)(p, x, y)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, val

    params, x, y = {"w": put(w0)}, put(x), put(y)
    state = jax.jit(tx.init)(params)
    losses = []
    for _ in range(NUM_STEPS):
        params, state, val = step(params, state, x, y)
        losses.append(float(np.asarray(val.addressable_data(0)) if hasattr(val, "addressable_data") else val))
    return params, losses, state[0]


def stats_problem(shard: bool):
    """A common-random-numbers risk comparison whose 10 replicates do not divide 4 devices (padded to 12)."""
    from icmlx.stats import benjamini_hochberg, bonferroni, simulate_risk_ratios, two_sided_pvalues

    rules = {
        "bonf": lambda x: bonferroni(two_sided_pvalues(x), 0.1).reject,
        "bh": lambda x: benjamini_hochberg(two_sided_pvalues(x), 0.1).reject,
    }
    return simulate_risk_ratios(jax.random.key(7), rules, n=256, p=0.05, tau2=9.0, num_replicates=10,
                                dtype=jnp.float32, shard=shard)
