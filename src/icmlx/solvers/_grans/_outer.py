"""The outer step of a G-RANS iteration, as a strategy object, and the linear algebra of each step.

`ThreeTermStep` combines the new correction with the previous update (the paper's step; in the energy
norm on SPD-like matrices, CG-like); `FlexibleGCR` keeps a window of past directions (flexible GCR with
``M_θ`` a variable right preconditioner); `NoOuterStep` is the ablation ``x ← x + M_θ(r)``.
"""


import abc

import equinox as eqx
import jax.numpy as jnp

from ..._checks import check_int

__all__ = ["AbstractOuterStep", "ThreeTermStep", "FlexibleGCR", "NoOuterStep"]

_NORMS = ("auto", "energy", "residual")


class AbstractOuterStep(eqx.Module):
    """How a G-RANS iteration combines its correction ``u = M_θ(r)`` into the update of ``x``.

    A strategy object (static settings only, hashable, not callable): pass one as ``GRANS(outer=...)``.
    Subclasses are `ThreeTermStep` (the default), `FlexibleGCR` and `NoOuterStep`.
    Each carries exactly the settings its step uses, so no combination is invalid, and its behaviour as
    methods: `norm_on` (the norm the step minimises on a matrix class), `stored_directions` and
    `step` (the update of ``x``).
    """

    trainable = True  # grans_loss trains through this step

    def stored_directions(self) -> int:
        """Past directions the step keeps (0: none)."""
        return 0

    def norm_on(self, spd_like: bool) -> str:
        """``"energy"`` or ``"residual"``: the norm the step minimises (and the safeguard keeps monotone)."""
        return "residual"

    def trained_step(self, spd_like: bool) -> str:
        """The step ``grans_loss`` trains through: ``"none"``, ``"residual"`` or ``"energy"``."""
        return self.norm_on(spd_like)

    @abc.abstractmethod
    def step(self, u, Au, e1, Ae1, p, Ap, r, window, energy: bool):
        """``(dx, window)``: the update of ``x`` from the correction ``u = M_θ(r)`` (with ``A u``), the smoother's
        first correction ``e1`` (with ``A e1``), the previous update ``p`` (with ``A p``) and the residual ``r``;
        ``window`` the stored directions ``(Z, AZ, ptr)`` (only `FlexibleGCR` uses it)."""


class ThreeTermStep(AbstractOuterStep):
    r"""The 3-term outer step over $U = [u,\ p_{k-1},\ e_1]$ (``u = e_1 + e_2 + e_3``).

    Residual norm: $\alpha = ((AU)^\top AU)^{-1} (AU)^\top r$ minimises $\|r - AU\alpha\|_2$
    and the safeguard keeps the true residual non-increasing. Energy norm (SPD-like ``A``):
    $\alpha = (U^\top A U)^{-1} U^\top r$ minimises $\|x^* - x - U\alpha\|_A$ (a Galerkin step,
    CG-like with a fixed symmetric $M_\theta$) and the safeguard keeps $\|x^* - x\|_A$
    non-increasing, checked exactly from the true residuals.

    Attributes:
      norm: ``"auto"`` (default: ``"energy"`` on SPD-like matrices, ``"residual"`` otherwise), ``"energy"``
        (needs an SPD-like matrix; refused at solve time otherwise) or ``"residual"`` (the paper's
        residual-monotone step).

    Raises:
      ValueError: ``norm`` is not one of the three names.

    Examples:
      >>> from icmlx.solvers import ThreeTermStep
      >>> ThreeTermStep(norm="energy")
      ThreeTermStep(norm='energy')
      >>> ThreeTermStep(norm="residual") == ThreeTermStep(norm="residual")
      True
    """

    norm: str = eqx.field(static=True, default="auto")

    def __check_init__(self):
        if self.norm not in _NORMS:
            raise ValueError(f"ThreeTermStep: norm must be 'auto', 'energy' or 'residual', got norm={self.norm!r}")

    def norm_on(self, spd_like: bool) -> str:
        if self.norm == "auto":
            return "energy" if spd_like else "residual"
        return self.norm

    def step(self, u, Au, e1, Ae1, p, Ap, r, window, energy: bool):
        return _outer3(u, Au, e1, Ae1, p, Ap, r, energy=energy)[0], window


class FlexibleGCR(AbstractOuterStep):
    r"""Truncated flexible GCR over the last ``memory`` directions (≈ FGMRES with a variable preconditioner).

    Each iteration ``A``-orthonormalises its two new directions ``u`` and ``e_1`` against the stored window
    and minimises $\|r - A d\|_2$ over all of them; the new directions overwrite the oldest. This keeps
    the information that restarts lose and is what makes indefinite Helmholtz converge
    (``memory >= 2 × iterations`` is full memory). Costs ``2 · memory · n`` floats. The safeguard keeps the true
    residual non-increasing.

    Attributes:
      memory: number of stored directions (a positive int).

    Raises:
      ValueError: ``memory`` is not a positive int.

    References:
      Eisenstat, Elman & Schultz, SIAM J. Numer. Anal. 20 (1983) (GCR); Saad, SIAM J. Sci. Comput. 14 (1993)
      (flexible preconditioning).

    Examples:
      >>> from icmlx.solvers import FlexibleGCR
      >>> FlexibleGCR(memory=40)
      FlexibleGCR(memory=40)
    """

    memory: int = eqx.field(static=True)

    def __check_init__(self):
        check_int(self.memory, "memory", where="FlexibleGCR", minimum=1)

    trainable = False

    def stored_directions(self) -> int:
        return self.memory

    def step(self, u, Au, e1, Ae1, p, Ap, r, window, energy: bool):
        dx, *window = _gcr_update(((u, Au), (e1, Ae1)), r, *window)
        return dx, tuple(window)


class NoOuterStep(AbstractOuterStep):
    """No outer step: ``x ← x + M_θ(r)``, with the residual-monotone safeguard (the ablation).

    Examples:
      >>> from icmlx.solvers import NoOuterStep
      >>> NoOuterStep()
      NoOuterStep()
    """

    def trained_step(self, spd_like: bool) -> str:
        return "none"

    def step(self, u, Au, e1, Ae1, p, Ap, r, window, energy: bool):
        return u, window


def _outer3(u, Au, e1, Ae1, p, Ap, r, energy: bool = False):
    """The 3-term outer step over ``U = [u, p, e_1]`` (regularised 3×3 normal equations).

    Residual norm: minimise ``‖r − A U α‖₂``, ``α = ((AU)ᵀAU)⁻¹(AU)ᵀr``. Energy norm (``energy=True``, SPD ``A``):
    minimise ``‖x* − x − U α‖_A``, ``α = (UᵀAU)⁻¹Uᵀr`` — a Galerkin step on the 3-dimensional space, the outer
    analogue of the projection with ``W = V``; with a fixed symmetric ``M_θ`` and ``p`` the previous update it
    is a (flexible) preconditioned-CG-like recurrence."""
    dt = r.dtype
    # written with 1-D dot products and axpys: XLA:CPU is slower on the (n, 3) stacked form
    U, AU = (u, p, e1), (Au, Ap, Ae1)
    L = U if energy else AU
    Gm = jnp.stack([jnp.stack([jnp.vdot(a, c) for c in AU]) for a in L])
    Gm = 0.5 * (Gm + jnp.conj(Gm).T)  # (Hermitian: jnp.vdot conjugates its first argument)
    tr = jnp.trace(Gm)
    ridge = (1e3 * jnp.finfo(dt).eps * jnp.abs(tr) + jnp.finfo(dt).tiny) * jnp.eye(3, dtype=jnp.finfo(dt).dtype)
    Gm = Gm + ridge.astype(dt)
    alpha = jnp.linalg.solve(Gm, jnp.stack([jnp.vdot(a, r) for a in L]))
    alpha = jnp.where(jnp.isfinite(alpha), alpha, 0.0)
    return (alpha[0] * u + alpha[1] * p + alpha[2] * e1), (alpha[0] * Au + alpha[1] * Ap + alpha[2] * Ae1)



def _gcr_update(cands, r, Z, AZ, ptr):
    """Truncated flexible GCR with a block of new directions.

    The candidates ``(u, A u)`` are ``A``-orthonormalised as a block against the stored window ``A Z``
    (orthonormal rows; block classical Gram-Schmidt twice) and against each other; ``‖r − A d‖₂`` is
    minimised exactly over ``d ∈ span(window ∪ new)`` and the new directions overwrite the oldest slots
    (a numerically dependent candidate is skipped). Any two stored directions less than ``m`` insertions
    apart are orthogonal. The window is read five times per call (fused products), never copied.
    Returns ``(dx, Z, AZ, ptr)``.
    """
    dt = r.dtype
    m = Z.shape[0]
    k = len(cands)
    U = jnp.stack([u for u, _ in cands])  # [k, n]
    Q = jnp.stack([au for _, au in cands])
    nq0 = jnp.linalg.norm(Q, axis=1)
    # (inner products conjugate the stored window: a complex A makes this GCR in the Hermitian inner product)
    AZc = jnp.conj(AZ)
    HB = AZc @ jnp.concatenate([Q, r[None]]).T  # [m, k+1]: pass-1 coefficients and β_old = AZ^H r
    H, beta_old = HB[:, :k], HB[:, k]
    Q = Q - H.T @ AZ
    H2 = AZc @ Q.T  # pass 2 (re-orthogonalisation)
    Q = Q - H2.T @ AZ
    C = (Z.T @ jnp.concatenate([H + H2, beta_old[:, None]], axis=1)).T  # one read of Z: [k+1, n]
    U = U - C[:k]
    dx = C[k]
    for i in range(k):  # static: orthonormalise the new block (modified Gram-Schmidt) and insert
        q, z = Q[i], U[i]
        for j in range(i):
            hj = jnp.vdot(Q[j], q)
            q, z = q - hj * Q[j], z - hj * U[j]
        nq = jnp.linalg.norm(q)
        good = (nq > 1e-8 * nq0[i]) & jnp.isfinite(nq) & jnp.all(jnp.isfinite(z))
        inv = jnp.where(good, 1.0 / jnp.where(good, nq, 1.0), 0.0).astype(dt)
        q, z = q * inv, z * inv
        Q, U = Q.at[i].set(q), U.at[i].set(z)
        dx = dx + jnp.vdot(q, r) * z
        Z = Z.at[ptr].set(jnp.where(good, z, Z[ptr]))
        AZ = AZ.at[ptr].set(jnp.where(good, q, AZ[ptr]))
        ptr = jnp.where(good, (ptr + 1) % m, ptr)
    return dx, Z, AZ, ptr


