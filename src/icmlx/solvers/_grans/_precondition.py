"""One G-RANS preconditioner application ``u = M_θ(r)``: smooth, exact projection onto the learned basis, smooth."""

from typing import Any

import jax
import jax.numpy as jnp

from ._network import GRANSNet
from ._operator import N_LEVELS, GRANSOperator
from ._outer import _outer3

__all__: list[str] = []


def _coarse_factor(op: GRANSOperator, w, galerkin: bool, explicit: bool = False):
    """Set up the exact projection onto span V (V = P_w): compressed ``A V`` and a factorisation of the
    small Gram matrix (Galerkin ``VᵀAV`` or least squares ``(AV)ᵀAV``). Returns ``(Z, F, piv)``.

    ``explicit=True`` stores ``F = G⁻¹`` instead of its factors: one ``m``-column solve up front, then every
    application is a single ``m×m`` matvec (XLA's CPU triangular solve is much slower than that at
    ``m = 512``), which pays off when the basis is reused (``refresh > 1``)."""
    dt = w.dtype
    A = op.A
    npad = A.shape[0]
    S = op.zcol.shape[1]
    m = op.col_used.shape[0]
    # compressed A V: Z[k, s] at column zcol[k, s] (conjugated inner products below: a complex A or basis gives the
    # Hermitian Gram matrix V^H A V or (AV)^H AV)
    contrib = A.vals[:, None] * w[A.cols]  # [nnz, Q]
    Z = jax.ops.segment_sum(contrib.reshape(-1), op.zslot.reshape(-1),
                            num_segments=npad * S + 1)[:-1].reshape(npad, S)
    # Gram matrix by one flat segment sum (faster on CPU than a 2-D scatter-add)
    if galerkin:  # G = Vᵀ A V
        idx = op.colidx[:, :, None] * m + op.zcol[:, None, :]
        G = jax.ops.segment_sum((jnp.conj(w)[:, :, None] * Z[:, None, :]).reshape(-1), idx.reshape(-1),
                                num_segments=m * m).reshape(m, m)
    else:  # least squares: G = (AV)ᵀ(AV)
        idx = op.zcol[:, :, None] * m + op.zcol[:, None, :]
        G = jax.ops.segment_sum((jnp.conj(Z)[:, :, None] * Z[:, None, :]).reshape(-1), idx.reshape(-1),
                                num_segments=m * m).reshape(m, m)
    used = op.col_used
    dg = jnp.diagonal(G)
    rdt = jnp.finfo(dt).dtype
    scale = jnp.sum(jnp.where(used, jnp.abs(dg), 0.0)) / jnp.maximum(jnp.sum(used), 1).astype(rdt)
    eps = jnp.finfo(dt).eps
    tau = 1e4 * eps * scale
    G = jnp.where(used[:, None] & used[None, :], G, 0.0)
    G = G + jnp.diag(jnp.where(used, tau, jnp.maximum(scale, 1.0))).astype(G.dtype)
    eye = jnp.eye(m, dtype=dt)
    if galerkin and not op.symmetric:  # (a complex A is never Galerkin: it is not SPD-like)
        F, piv = jax.scipy.linalg.lu_factor(G)
        if explicit:
            return Z, jax.scipy.linalg.lu_solve((F, piv), eye), jnp.zeros((m,), jnp.int32)
        return Z, F, piv.astype(jnp.int32)
    L = jnp.linalg.cholesky(G)
    if explicit:
        return Z, jax.scipy.linalg.cho_solve((L, True), eye), jnp.zeros((m,), jnp.int32)
    return Z, L, jnp.zeros((m,), jnp.int32)


def _coarse_apply(op: GRANSOperator, w, Z, F, piv, r, galerkin: bool, explicit: bool = False):
    """Apply the factored projection to ``r``: ``e = V y``, ``A e = (AV) y``."""
    if galerkin:
        g = jnp.zeros(F.shape[:1], r.dtype).at[op.colidx].add(jnp.conj(w) * r[:, None])  # V^H r
    else:
        g = jnp.zeros(F.shape[:1], r.dtype).at[op.zcol].add(jnp.conj(Z) * r[:, None])  # (AV)^H r
    g = jnp.where(op.col_used, g, 0.0)
    if explicit:
        y = F @ g
    elif galerkin and not op.symmetric:
        y = jax.scipy.linalg.lu_solve((F, piv), g)
    else:
        y = jax.scipy.linalg.cho_solve((F, True), g)
    y = jnp.where(jnp.isfinite(y), y, 0.0)
    # e = V y as Q one-dimensional gathers (XLA:CPU gathers with a 2-D index are slower than 1-D ones), and
    # A e = (AV) y as one ELL product rather than the slower (n, S) gather of the compressed AV; equal in exact
    # arithmetic (V vanishes on padding rows)
    e = sum(w[:, q] * y[op.colidx[:, q]] for q in range(w.shape[1]))
    Ae = op.ell.mv(e)
    return e, Ae


def _coarse(op: GRANSOperator, w, r, galerkin: bool):
    """Exact projection onto span V (V = P_w): returns the correction e = V y and A e."""
    Z, F, piv = _coarse_factor(op, w, galerkin)
    return _coarse_apply(op, w, Z, F, piv, r, galerkin)


def _basis(net: Any, op: GRANSOperator, r, *, smoother: Any, galerkin: bool, explicit: bool = False):
    """Basis weights of a head (a ``GRANSNet`` or the zero head) for the residual after one pre-smoothing, and the
    factored projection."""
    dt = r.dtype
    dinv_sqrt = 1.0 / jnp.sqrt(jnp.abs(op.ell.diagonal()))  # the ELL layout, as in the network (no scatter)
    e1 = smoother.smooth(op, r)
    s = dinv_sqrt.astype(dt) * (r - op.ell.mv(e1))
    rdt = jnp.finfo(dt).dtype  # (real; cast to dt for a complex residual)
    rs = s * (jnp.sqrt(jnp.asarray(op.n, rdt)) / jnp.maximum(jnp.linalg.norm(s), jnp.finfo(dt).tiny)).astype(dt)
    w = _head_weights(net, op, rs).astype(dt)
    Z, F, piv = _coarse_factor(op, w, galerkin, explicit)
    # the Galerkin application needs only V and the factors: not carrying the (n, S) compressed AV keeps the
    # solve loop's state small
    return w, (None if galerkin else Z), F, piv


def _head_weights(net: Any, op: GRANSOperator, rs):
    r"""The basis weights ``w[n_pad, Q]`` of a head for the normalised residual ``rs`` (float32 network).

    Real ``rs``: ``net(op, rs)``. Complex ``rs`` (a complex ``A``): the residual is first turned by the global
    phase that makes $\sum_i \hat r_i^2$ real and non-negative (so its real part carries at least as much as its
    imaginary part and the two are orthogonal, whatever phase the residual had), then the real network runs on the
    real and the imaginary part, as a batch of two, and
    $w = \mathrm{net}(\operatorname{Re}\hat r) + i\,(\mathrm{net}(\operatorname{Im}\hat r) - [1, 0])$: the
    zero head gives the complex $[1, \hat r]$ exactly, and a network adds its learned head to each part."""
    if not jnp.iscomplexobj(rs):
        return net(op, rs.astype(jnp.float32))
    q = jnp.sum(rs * rs)
    phase = jnp.conj(jnp.sqrt(q / jnp.maximum(jnp.abs(q), jnp.finfo(q.dtype).tiny).astype(q.dtype)))
    phase = jnp.where(jnp.abs(q) > 0, phase, jnp.ones((), q.dtype))
    rs = (rs * phase).astype(jnp.complex64)
    wr, wi = jax.vmap(lambda v: net(op, v))(jnp.stack([rs.real, rs.imag]))
    const = (jnp.arange(wi.shape[1]) % (wi.shape[1] // N_LEVELS) == 0).astype(wi.dtype)  # the [1, 0] columns
    return jax.lax.complex(wr, wi - const[None, :] * op.mask.astype(wi.dtype)[:, None])


def _precondition_with(op: GRANSOperator, basis, r, *, smoother: Any, galerkin: bool,
                       explicit: bool = False):
    """``u = M(r)`` for a given (possibly reused) basis: smooth, project, smooth; with ``A u`` and ``e_1``."""
    w, Z, F, piv = basis
    e1 = smoother.smooth(op, r)
    Ae1 = op.ell.mv(e1)
    r1 = r - Ae1
    e2, Ae2 = _coarse_apply(op, w, Z, F, piv, r1, galerkin, explicit)
    e3 = smoother.smooth(op, r1 - Ae2)
    Ae3 = op.ell.mv(e3)
    return e1 + e2 + e3, Ae1 + Ae2 + Ae3, e1, Ae1


def _precondition(net: GRANSNet, op: GRANSOperator, r, *, smoother: Any, galerkin: bool):
    """The G-RANS correction ``u = M_θ(r)`` (smooth, learned projection, smooth) with ``A u`` and ``e_1``:
    a fresh basis for ``r`` (`_basis`) applied once (`_precondition_with`)."""
    basis = _basis(net, op, r, smoother=smoother, galerkin=galerkin)
    return _precondition_with(op, basis, r, smoother=smoother, galerkin=galerkin)


def _iterate(net: GRANSNet, op: GRANSOperator, b, x, r, p, Ap, *, smoother: Any, galerkin: bool,
             outer: str):
    """One G-RANS iteration (fresh basis for ``r``); returns the proposed ``(dx, A dx)``.

    ``outer``: ``"residual"`` or ``"energy"`` (the 3-term step over ``[u, p, e_1]`` in that norm; the energy
    norm needs an SPD-like ``A``, checked by the callers) or ``"none"`` (``dx = u``)."""
    if outer not in ("none", "residual", "energy"):
        raise ValueError(f"_iterate: outer must be 'none', 'residual' or 'energy', got {outer=!r}")
    u, Au, e1, Ae1 = _precondition(net, op, r, smoother=smoother, galerkin=galerkin)
    if outer == "none":
        return u, Au
    return _outer3(u, Au, e1, Ae1, p, Ap, r, energy=outer == "energy")


