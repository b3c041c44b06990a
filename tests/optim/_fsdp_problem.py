"""An FSDP-style problem shared by the in-process (4 fake devices) and the two-process FSDP tests.

Every weight is sharded over the mesh axis ``"fsdp"`` (each device holds a slice of its rows, vectors split
the same way), as fully sharded data parallelism stores them; DASH's and SOAP's block stacks are sharded over
the same axis. ``run(mesh, put)`` takes :data:`NUM_STEPS` steps of a two-layer regression and returns the
parameters, the losses and the optimizer state; with ``mesh=None`` it is the unsharded reference.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from icmlx.optim import scale_by_dash, scale_by_soap

NUM_STEPS = 8
SHAPES = {"w1": (32, 24), "b1": (24,), "w2": (24, 16)}


def data():
    rng = np.random.default_rng(0)
    params = {k: (0.3 * rng.standard_normal(s)).astype(np.float32) for k, s in SHAPES.items()}
    # a fresh minibatch per step: with one full batch, SOAP's second call would see the first call's gradient
    # again (its first call makes no step), whose rotated form is diagonal up to rounding, and Adam's sign-like
    # first step in that basis would follow the rounding of the zero entries
    x = rng.standard_normal((NUM_STEPS, 64, 32)).astype(np.float32)
    y = rng.standard_normal((NUM_STEPS, 64, 16)).astype(np.float32)
    return params, x, y


def param_spec(name):
    return jax.sharding.PartitionSpec("fsdp", *([None] * (len(SHAPES[name]) - 1)))


def make_tx(kind, mesh):
    kw = {} if mesh is None else {"mesh": mesh, "mesh_axis": "fsdp"}
    if kind == "dash":
        inner = scale_by_dash(8, precondition_frequency=2, **kw)
    else:
        inner = scale_by_soap(8, precondition_frequency=2, **kw)
    # DASH's first grafted steps are 1 / sqrt(1 - b2^t) (10x at t = 1) its later ones: at SOAP's step its first
    # steps overshoot and the run turns chaotic, which amplifies the sharded run's different float32 rounding
    return optax.chain(inner, optax.scale(-0.002 if kind == "dash" else -0.05))


def run(kind, mesh, put, put_param):
    """``(params, losses, state)`` after ``NUM_STEPS`` steps; ``put`` places data, ``put_param(name, a)`` a weight."""
    p0, x, y = data()
    tx = make_tx(kind, mesh)

    def loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] - y) ** 2)

    @jax.jit
    def step(p, s, x, y):
        val, g = jax.value_and_grad(loss)(p, x, y)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, val

    params = {k: put_param(k, v) for k, v in p0.items()}
    x, y = put(x), put(y)
    state = tx.init(params)
    losses = []
    for i in range(NUM_STEPS):
        params, state, val = step(params, state, x[i], y[i])
        losses.append(float(np.asarray(val.addressable_data(0))))
    return params, losses, state
