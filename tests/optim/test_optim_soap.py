"""Tests of icmlx.optim SOAP (scale_by_soap / soap) against a float64 NumPy implementation of its algorithm."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from icmlx.optim import SOAP_STATIC_ARGS, SoapState, scale_by_soap, soap

DT = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
X64 = DT == jnp.float64


# ---------------------------------------------------------------------------------------------------------
# float64 NumPy SOAP, one matrix at a time (arXiv:2409.11321, Algorithm 3 and the authors' reference code):
# first call sets up the factors and their eigenbases without a step; Adam in the rotated basis with the
# bias correction sqrt(1 - b2^t) / (1 - b1^t); factors updated after the step; every f steps the bases are
# refreshed by one power step + QR, the second moment reordered as the basis columns are, the first moment
# rotated to the new basis.
# ---------------------------------------------------------------------------------------------------------


def _eigh_desc(f):
    _, q = np.linalg.eigh(f)
    return q[:, ::-1]


class NumpySoapMatrix:
    def __init__(self, shape, b1, b2, beta, eps, freq, eigenbasis):
        self.b1, self.b2, self.beta, self.eps, self.freq, self.eigenbasis = b1, b2, beta, eps, freq, eigenbasis
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.L = np.zeros((shape[0], shape[0]))
        self.R = np.zeros((shape[1], shape[1]))
        self.step = None

    def __call__(self, g):
        g = np.asarray(g, np.float64)
        if self.step is None:
            self.step = 0
            self._factors(g)
            self.QL, self.QR = _eigh_desc(self.L), _eigh_desc(self.R)
            return np.zeros_like(g)
        self.step += 1
        t = self.step
        gp = self.QL.T @ g @ self.QR
        self.m = self.b1 * self.m + (1 - self.b1) * gp
        self.v = self.b2 * self.v + (1 - self.b2) * gp**2
        u = self.QL @ (self.m / (np.sqrt(self.v) + self.eps)) @ self.QR.T
        u *= np.sqrt(1 - self.b2**t) / (1 - self.b1**t)
        self._factors(g)
        if t % self.freq == 0:
            m_orig = self.QL @ self.m @ self.QR.T
            if self.eigenbasis == "qr":
                self.QL, il = self._power_qr(self.L, self.QL)
                self.QR, ir = self._power_qr(self.R, self.QR)
                self.v = self.v[il][:, ir]
            else:
                self.QL, self.QR = _eigh_desc(self.L), _eigh_desc(self.R)
            self.m = self.QL.T @ m_orig @ self.QR
        return u

    def _factors(self, g):
        self.L = self.beta * self.L + (1 - self.beta) * g @ g.T
        self.R = self.beta * self.R + (1 - self.beta) * g.T @ g

    @staticmethod
    def _power_qr(f, q):
        idx = np.argsort(-np.diag(q.T @ f @ q), kind="stable")
        q, _ = np.linalg.qr(f @ q[:, idx])
        return q, idx


class NumpyAdamLeaf:
    """The reference's treatment of a parameter it does not rotate: Adam, no step on the first call."""

    def __init__(self, shape, b1, b2, eps):
        self.b1, self.b2, self.eps = b1, b2, eps
        self.m, self.v, self.step = np.zeros(shape), np.zeros(shape), None

    def __call__(self, g):
        g = np.asarray(g, np.float64)
        if self.step is None:
            self.step = 0
            return np.zeros_like(g)
        self.step += 1
        t = self.step
        self.m = self.b1 * self.m + (1 - self.b1) * g
        self.v = self.b2 * self.v + (1 - self.b2) * g**2
        return self.m / (np.sqrt(self.v) + self.eps) * np.sqrt(1 - self.b2**t) / (1 - self.b1**t)


def _tiles(shape, B):
    return [(i, j) for i in range(0, shape[0], B) for j in range(0, shape[1], B)]


class NumpySoap:
    """SOAP on B x B tiles of 2-D leaves (each tile its own matrix), Adam on 1-D leaves."""

    def __init__(self, params, B, **kw):
        self.B = B
        adam_kw = {k: kw[k] for k in ("b1", "b2", "eps")}
        self.opt = {}
        for name, p in params.items():
            if p.ndim == 1:
                self.opt[name] = NumpyAdamLeaf(p.shape, **adam_kw)
            else:
                self.opt[name] = {ij: NumpySoapMatrix((B, B), **kw) for ij in _tiles(p.shape, B)}

    def __call__(self, grads):
        out = {}
        for name, g in grads.items():
            g = np.asarray(g, np.float64)
            if g.ndim == 1:
                out[name] = self.opt[name](g)
                continue
            u = np.zeros_like(g)
            for (i, j), o in self.opt[name].items():
                u[i : i + self.B, j : j + self.B] = o(g[i : i + self.B, j : j + self.B])
            out[name] = u
        return out


def _gradient_stream(shapes, steps, seed=0):
    """Anisotropic gradients (fixed row/column scales times noise around a mean): distinct factor spectra."""
    rng = np.random.default_rng(seed)
    base = {k: rng.normal(size=s) for k, s in shapes.items()}
    scale = {k: (np.exp(rng.normal(size=s[0]))[:, None] * np.exp(rng.normal(size=s[1]))[None, :]
                 if len(s) == 2 else np.exp(rng.normal(size=s))) for k, s in shapes.items()}
    for _ in range(steps):
        yield {k: scale[k] * (base[k] + rng.normal(size=s)) for k, s in shapes.items()}


SHAPES = {"w1": (8, 8), "w2": (4, 12), "b": (8,)}


@pytest.mark.x64
@pytest.mark.parametrize("eigenbasis", ["qr", "eigh"])
def test_soap_matches_numpy_reference_over_50_steps(eigenbasis):
    kw = dict(b1=0.95, b2=0.95, beta=0.9, eps=1e-8, freq=5, eigenbasis=eigenbasis)
    params = {k: jnp.zeros(s, DT) for k, s in SHAPES.items()}
    tx = scale_by_soap(4, kw["b1"], kw["b2"], kw["beta"], kw["eps"], precondition_frequency=5,
                       eigenbasis=eigenbasis)
    state = tx.init(params)
    update = jax.jit(tx.update)
    ref = NumpySoap({k: np.zeros(s) for k, s in SHAPES.items()}, 4, **kw)
    # float32: the rotations and Adam's ratio m / sqrt(v) carry ~10 float32 roundings per step through 50
    # steps and 10 basis refreshes; the error is relative to the update's scale (each entry of the rotated
    # Adam direction is O(1)).
    tol = 1e-10 if X64 else 2e-4
    worst = 0.0
    for step, g in enumerate(_gradient_stream(SHAPES, 50)):
        u, state = update({k: jnp.asarray(v, DT) for k, v in g.items()}, state, params)
        r = ref(g)
        for k in SHAPES:
            scale = max(1.0, np.abs(r[k]).max())
            err = np.abs(np.asarray(u[k], np.float64) - r[k]).max() / scale
            worst = max(worst, err)
            assert err <= tol, (step, k, err)
        if step == 0:
            assert all(np.all(np.asarray(u[k]) == 0) for k in SHAPES)  # the first call makes no step
    assert int(state.count) == 50 and int(state.basis_failures) == 0
    assert worst > 0  # the comparison saw nonzero differences somewhere (not a vacuous pass)


def test_soap_weight_decay_is_the_reference_order():
    # soap = scale_by_soap's direction d, W <- W - lr d, then W <- W - lr wd W (on the stepped weights)
    lr, wd = 0.05, 0.1
    params = {k: jnp.asarray(np.random.default_rng(1).normal(size=s), DT) for k, s in SHAPES.items()}
    opt, tx = soap(lr, 4, weight_decay=wd), scale_by_soap(4)
    so, st = opt.init(params), tx.init(params)
    for g in _gradient_stream(SHAPES, 4, seed=2):
        g = {k: jnp.asarray(v, DT) for k, v in g.items()}
        u, so = jax.jit(opt.update)(g, so, params)
        d, st = jax.jit(tx.update)(g, st, params)
        for k in SHAPES:
            p = np.asarray(params[k], np.float64)
            stepped = p - lr * np.asarray(d[k], np.float64)
            np.testing.assert_allclose(np.asarray(p + u[k], np.float64), stepped - lr * wd * stepped,
                                       rtol=1e-6, atol=1e-6)
        params = optax.apply_updates(params, u)


def test_soap_is_optax_shaped():
    params = {k: jnp.zeros(s, DT) for k, s in SHAPES.items()}
    grads = [{k: jnp.asarray(v, DT) for k, v in g.items()} for g in _gradient_stream(SHAPES, 12, seed=3)]
    # inject_hyperparams with a schedule equals the plain optimizer; the state keeps its dtypes and shapes
    inj = optax.inject_hyperparams(soap, static_args=SOAP_STATIC_ARGS)(
        learning_rate=optax.linear_schedule(0.1, 0.01, 10), block_size=4, precondition_frequency=3)
    plain = soap(optax.linear_schedule(0.1, 0.01, 10), 4, precondition_frequency=3)
    si, sp = inj.init(params), plain.init(params)
    assert isinstance(sp[0], SoapState)
    spec0 = jax.tree.map(lambda x: (x.shape, x.dtype), sp)
    ui_step, up_step = jax.jit(inj.update), jax.jit(plain.update)
    for g in grads:
        ui, si = ui_step(g, si, params)
        up, sp = up_step(g, sp, params)
        for k in SHAPES:
            np.testing.assert_allclose(np.asarray(ui[k]), np.asarray(up[k]), rtol=2e-4, atol=1e-5)
    assert jax.tree.map(lambda x: (x.shape, x.dtype), sp) == spec0
    assert up_step._cache_size() == 1
    # in a chain, and with a non-finite gradient skipped (state unchanged, zero update)
    tx = optax.chain(optax.clip_by_global_norm(10.0), scale_by_soap(4))
    st = tx.init(params)
    st1 = jax.jit(tx.update)(grads[0], st, params)[1]
    bad = dict(grads[1], b=grads[1]["b"].at[0].set(jnp.nan))
    u, st2 = jax.jit(tx.update)(bad, st1, params)
    assert all(np.all(np.asarray(u[k]) == 0) for k in SHAPES)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b, equal_nan=True)), st1, st2))


def test_soap_converges_on_an_ill_conditioned_regression():
    # min ||A W B - C||^2 with kappa(A) = kappa(B) = 30: SOAP ends well below its start and below Adam's loss
    rng = np.random.default_rng(0)
    def mat(n, kappa):
        q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        return (q * np.geomspace(1, 1 / kappa, n)) @ q.T
    A, Bm = jnp.asarray(mat(16, 30.0), DT), jnp.asarray(mat(16, 30.0), DT)
    C = A @ jnp.asarray(rng.normal(size=(16, 16)), DT) @ Bm
    loss = lambda w: jnp.sum((A @ w @ Bm - C) ** 2)

    def run(opt):
        w = jnp.zeros((16, 16), DT)
        s = opt.init(w)

        @jax.jit
        def step(w, s):
            u, s = opt.update(jax.grad(loss)(w), s, w)
            return optax.apply_updates(w, u), s

        for _ in range(150):
            w, s = step(w, s)
        return float(loss(w))

    start = float(loss(jnp.zeros((16, 16), DT)))
    best_soap = min(run(soap(lr, 8, weight_decay=0.0)) for lr in (3e-2, 1e-1))
    with jax.numpy_dtype_promotion("standard"):
        best_adam = min(run(optax.adam(lr)) for lr in (3e-2, 1e-1))
    assert best_soap < 1e-2 * start and best_soap < best_adam, (best_soap, best_adam, start)


def test_soap_bad_arguments():
    with pytest.raises(TypeError, match="learning_rate"):
        soap("1e-3")
    with pytest.raises(TypeError, match="shampoo_beta"):
        scale_by_soap(4, shampoo_beta="0.9")
    with pytest.raises(ValueError, match="shampoo_beta"):
        scale_by_soap(4, shampoo_beta=1.0)
    with pytest.raises(ValueError, match="eigenbasis"):
        scale_by_soap(4, eigenbasis="svd")
    with pytest.raises(ValueError, match="static_args=SOAP_STATIC_ARGS"):
        optax.inject_hyperparams(soap)(learning_rate=0.1, block_size=4).init({"w": jnp.zeros((4, 4))})
