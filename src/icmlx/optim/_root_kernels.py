"""Batched kernels of the inverse-root solvers: power iteration, Newton–DB, coupled Newton, Chebyshev, eigh.

Every kernel works on a stack ``(N, n, n)``: each iteration is one batched matmul (or one batched ``eigh``), so
``N`` same-shaped Shampoo blocks cost one kernel launch per iteration rather than ``N``. The solvers take
``a_reg`` already regularised and a per-matrix scale ``s`` ``(N, 1, 1)`` with ``spec(a_reg)`` in ``(0, s]``
(approximately), and return ``a_reg^{-1/p}``.
"""

import functools

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array

#: Growth of coupled Newton's error in one step beyond which the step is rejected (the matrix has diverged).
_CN_GROWTH = 1.2


def _floor(dtype) -> float:
    # Smallest scale we let a block have: keeps s^{-1/p} finite for an all-zero block.
    return float(np.sqrt(np.finfo(np.dtype(dtype)).tiny))


def _resolve_matmul_dtype(matmul_dtype, dtype):
    """The matmul operand dtype to cast to, or ``None`` when it is the input dtype (validated by the solver)."""
    if matmul_dtype is None:
        return None
    mdt = jnp.dtype(matmul_dtype)
    return None if mdt == jnp.dtype(dtype) else mdt


def _mm(a: Array, b: Array, mdt) -> Array:
    """Batched matmul; with ``mdt`` the operands are cast to it and accumulated in ``a.dtype``."""
    if mdt is None:
        return jnp.matmul(a, b)
    out = a.dtype
    return jnp.matmul(a.astype(mdt), b.astype(mdt), preferred_element_type=out).astype(out)


def _eye_like(a: Array) -> Array:
    return jnp.eye(a.shape[-1], dtype=a.dtype)


def _symmetrize(a: Array) -> Array:
    return 0.5 * (a + jnp.swapaxes(a, -1, -2))


_START_SEED = 1729


@functools.lru_cache(maxsize=64)
def _threefry_bits(seed: int, size: int) -> np.ndarray:
    """``jax.random.bits(jax.random.key(seed), (size,))`` computed in NumPy (uint32, bit for bit).

    Threefry-2x32 (Salmon et al. 2011, 20 rounds) of the 64-bit counters ``0..size-1`` split into (high, low)
    words, the two output words XOR-ed: JAX's default (partitionable) threefry bits.
    """
    x = [np.zeros(size, np.uint32), np.arange(size, dtype=np.uint32)]  # size < 2^32: the high words are 0
    k = [np.uint32(seed >> 32), np.uint32(seed & 0xFFFFFFFF)]
    ks = [k[0], k[1], k[0] ^ k[1] ^ np.uint32(0x1BD11BDA)]
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    x[0] = x[0] + ks[0]
    x[1] = x[1] + ks[1]
    for i in range(5):
        for r in rotations[i % 2]:
            x[0] = x[0] + x[1]
            x[1] = (x[1] << np.uint32(r)) | (x[1] >> np.uint32(32 - r))
            x[1] = x[0] ^ x[1]
        x[0] = x[0] + ks[(i + 1) % 3]
        x[1] = x[1] + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x[0] ^ x[1]


def _start_vectors(n: int, k: int) -> Array:
    """``jax.random.normal(jax.random.key(1729), (n, k), float32)``, with the random bits made on the host.

    The bits are a constant of the program, so it does not carry a threefry hash (the most expensive part of
    the power iteration to compile); the map from bits to normals is ``jax.random.normal``'s own (uniform on
    ``(-1, 1)`` from the mantissa bits, then ``sqrt(2) erfinv``), so the values are the same bit for bit
    (``tests/optim/test_optim_dash_compile.py`` checks it).
    """
    bits = _threefry_bits(_START_SEED, n * k).reshape(n, k)
    # mantissa bits under exponent 0: a float in [1, 2), minus 1 (exact)
    floats = ((bits >> np.uint32(9)) | np.float32(1.0).view(np.uint32)).view(np.float32) - np.float32(1.0)
    lo = np.nextafter(np.float32(-1.0), np.float32(0.0), dtype=np.float32)
    # the barrier keeps XLA from folding the constant through erfinv at compile time (its folder rounds
    # differently from the compiled kernel)
    floats = lax.optimization_barrier(jnp.asarray(floats))
    u = jnp.maximum(lo, floats * (np.float32(1.0) - lo) + lo)
    return np.float32(np.sqrt(2)) * lax.erf_inv(u)


def _power_iteration(a: Array, num_steps: int, num_vectors: int, damping: float, mdt) -> Array:
    """Largest-eigenvalue estimate of each PSD matrix in ``a`` (N, n, n) -> (N,)."""
    n = a.shape[-1]
    k = max(1, min(num_vectors, n))
    dtype = a.dtype
    # Work on A / max|A_ij| (scale-free, no under/overflow), damped by `damping` * I in those units: a zero
    # block gives a tiny positive estimate rather than 0/0 (the DASH ``eps_power_iter`` fix).
    c = jnp.max(jnp.abs(a), axis=(-2, -1))
    c = jnp.where(c > 0, c, _floor(dtype))  # exact for any scale; the floor only for an all-zero block
    ad = a / c[:, None, None] + damping * _eye_like(a)
    v0 = _start_vectors(n, k).astype(dtype)
    v0 = jnp.broadcast_to(v0 / jnp.linalg.norm(v0, axis=0, keepdims=True), a.shape[:-2] + (n, k))

    def body(_, v):
        w = _mm(ad, v, mdt)
        return w / jnp.linalg.norm(w, axis=-2, keepdims=True)

    v = lax.fori_loop(0, num_steps, body, v0)
    rayleigh = jnp.sum(v * _mm(ad, v, mdt), axis=-2)  # (N, k), v has unit columns
    return jnp.max(rayleigh, axis=-1) * c



def _ndb(x: Array, s: Array, num_steps: int, mdt) -> tuple[Array, Array]:
    """Coupled inverse-free Newton-Denman-Beavers: returns (Y, Z) with Y ~ (x/s)^{1/2}, Z ~ (x/s)^{-1/2}."""
    eye = _eye_like(x)
    a = x / s
    e = 1.5 * eye - 0.5 * a
    y = _mm(a, e, mdt)
    z = e

    def body(_, carry):
        y, z = carry
        e = 1.5 * eye - 0.5 * _mm(z, y, mdt)
        return _mm(y, e, mdt), _mm(e, z, mdt)

    y, z = lax.fori_loop(0, num_steps - 1, body, (y, z))
    return y, z


def _newton_db(a_reg: Array, s: Array, p: int, num_steps: int, mdt) -> Array:
    if p == 2:
        _, z = _ndb(a_reg, s, num_steps, mdt)
        return z / jnp.sqrt(s)
    # p == 4: square root first, then the inverse square root of that.
    y, _ = _ndb(a_reg, s, num_steps, mdt)
    sqrt_s = jnp.sqrt(s)
    root = _symmetrize(y * sqrt_s)
    _, z = _ndb(root, sqrt_s, num_steps, mdt)
    return z / jnp.sqrt(sqrt_s)


def _matpow(m: Array, p: int, mdt) -> Array:
    out = m
    for _ in range(p - 1):  # p is a small static integer
        out = _mm(out, m, mdt)
    return out


def _coupled_newton(a_reg: Array, s: Array, p: int, max_steps: int, rtol: float, mdt) -> tuple[Array, Array, Array]:
    """Higham's coupled Newton iteration for A^{-1/p} (the Distributed Shampoo / DASH CN solver), per matrix.

    Every matrix of the stack stops on its own: it is frozen once ``max|M - I| <= rtol`` (converged) or once a
    step would make its error grow by > 1.2x or go non-finite (that step is rejected and the previous iterate
    kept); the batched loop runs while any matrix is still active and at most ``max_steps`` times. So a matrix's
    result does not depend on which other matrices share its batch (chunked == unchunked).

    Returns ``(X, steps, status)``: ``steps`` the loop count (int32 scalar, the maximum over the stack) and
    ``status`` per matrix (int32 ``(N,)``): 0 converged, 1 hit ``max_steps``, 2 diverged (the error grew or
    went non-finite, including a non-finite start).
    """
    eye = _eye_like(a_reg)
    alpha = -1.0 / p
    z = (p + 1.0) / (2.0 * s)
    x0 = jnp.broadcast_to(z ** (1.0 / p) * eye, a_reg.shape)
    m0 = z * a_reg

    def residual(m):
        return jnp.max(jnp.abs(m - eye), axis=(-2, -1))

    err0 = residual(m0)
    diverged0 = ~jnp.isfinite(err0)
    active0 = (err0 > rtol) & ~diverged0

    def cond(c):
        i, _, _, _, active, _ = c
        return (i < max_steps) & jnp.any(active)

    def body(c):
        i, x, m, err, active, diverged = c
        mp = (1.0 - alpha) * eye + alpha * m
        x_new = _mm(x, mp, mdt)
        m_new = _mm(_matpow(mp, p, mdt), m, mdt)
        err_new = residual(m_new)
        bad = active & ((~jnp.isfinite(err_new)) | (err_new >= _CN_GROWTH * err))
        take = active & ~bad
        sel = take[:, None, None]
        x = jnp.where(sel, x_new, x)
        m = jnp.where(sel, m_new, m)
        err = jnp.where(take, err_new, err)
        return i + 1, x, m, err, take & (err > rtol), diverged | bad

    i0 = jnp.zeros([], jnp.int32)
    i, x, _, err, _, diverged = lax.while_loop(cond, body, (i0, x0, m0, err0, active0, diverged0))
    status = jnp.where(diverged, 2, jnp.where(err <= rtol, 0, 1)).astype(jnp.int32)
    return x, i, status


@functools.lru_cache(maxsize=64)
def _chebyshev_coefficients_np(p: int, degree: int, delta: float, num_nodes: int = 10000) -> np.ndarray:
    """Chebyshev coefficients of f(x) = x^{-1/p} on [delta, 1 + delta] (Chebyshev-Gauss quadrature)."""
    j = np.arange(num_nodes, dtype=np.float64)
    theta = np.pi * (j + 0.5) / num_nodes
    x = 0.5 * np.cos(theta) + 0.5 + delta
    f = x ** (-1.0 / p)
    k = np.arange(degree + 1, dtype=np.float64)
    c = (2.0 / num_nodes) * (np.cos(np.outer(k, theta)) @ f)
    c[0] /= 2.0
    return c


def _clenshaw(s_mat: Array, coeffs: Array, mdt) -> Array:
    """Evaluate sum_k c_k T_k(S) by the matrix Clenshaw recurrence (coeffs in increasing degree)."""
    eye = _eye_like(s_mat)
    zero = jnp.zeros_like(s_mat)

    def step(carry, c):
        b1, b2 = carry
        b = 2.0 * _mm(s_mat, b1, mdt) - b2 + c * eye
        return (b, b1), None

    # b_k for k = d, ..., 1
    (b1, b2), _ = lax.scan(step, (zero, zero), coeffs[1:][::-1])
    return _mm(s_mat, b1, mdt) - b2 + coeffs[0] * eye


def _chebyshev(a_reg: Array, s: Array, p: int, degree: int, delta: float, mdt) -> Array:
    coeffs = jnp.asarray(_chebyshev_coefficients_np(p, degree, delta), dtype=a_reg.dtype)
    s_mat = (2.0 / s) * a_reg - _eye_like(a_reg)
    out = _clenshaw(s_mat, coeffs, mdt)  # ~ (a_reg / s + delta I)^{-1/p}
    return out * s ** (-1.0 / p)


def _eigh_root(a_sym: Array, p: int, epsilon: float, relative_epsilon: float, heuristic: str):
    """(A^{-1/p} by eigendecomposition, the ridge per matrix (N,))."""
    w, q = jnp.linalg.eigh(a_sym)
    wmax = jnp.max(jnp.abs(w), axis=-1, keepdims=True)
    ridge = epsilon + relative_epsilon * wmax + _floor(a_sym.dtype)
    if heuristic == "shampoo":
        wmin = jnp.min(w, axis=-1, keepdims=True)
        w = w - jnp.minimum(wmin, 0.0) + ridge
        inv = w ** (-1.0 / p)
    elif heuristic == "abs":
        inv = (jnp.abs(w) + ridge) ** (-1.0 / p)
    else:  # relu: pseudo-inverse, eigenvalues below the ridge are dropped
        keep = w > ridge
        inv = jnp.where(keep, jnp.where(keep, w, 1.0) ** (-1.0 / p), 0.0)
    root = jnp.matmul(q * inv[..., None, :], jnp.swapaxes(q, -1, -2))
    # Rounding limit: eigh resolves eigenvalues only to ~ n eps max|lambda|, so a spectrum (after the heuristic)
    # spanning more than 1 / (n eps) is dominated by rounding ("relu" drops those eigenvalues instead).
    if heuristic == "relu":
        limited = jnp.zeros(w.shape[:-1], bool)
    else:
        wt = w if heuristic == "shampoo" else jnp.abs(w) + ridge
        limited = jnp.min(wt, axis=-1) < a_sym.shape[-1] * float(jnp.finfo(a_sym.dtype).eps) * jnp.max(wt, axis=-1)
    return root, ridge[..., 0], limited

