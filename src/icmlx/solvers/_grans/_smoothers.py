"""The smoother ``S`` of a G-RANS iteration, as a strategy object: polynomial relaxation (the multigrid family's
`ChebyshevRelaxation` / `JacobiRelaxation`) or one V-cycle of the multigrid family's hierarchy."""

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._checks import check_int
from ..._strategy import as_strategy
from .._amg._relaxation import (
    AbstractRelaxation,
    ChebyshevRelaxation,
    JacobiRelaxation,
    lambda_max_bound,
    relaxation_diagonal,
)

__all__ = ["AbstractSmoother", "ChebyshevSmoother", "MultilevelSmoother"]

# outer="auto" off SPD-like matrices with the V-cycle smoother: flexible GCR memory per matrix class (Helmholtz
# k = 12 needs about twice its iteration count in memory; advection-diffusion converges with 40)
GCR_MEMORY_SYMMETRIC = 100
GCR_MEMORY_NONSYMMETRIC = 40


# jitted: compiled once per size bucket, not once per set-up
_lambda_max_jit = eqx.filter_jit(lambda_max_bound)


def _positive_int(value: Any, name: str, owner: str) -> None:
    check_int(value, name, where=owner, minimum=1)


class AbstractSmoother(eqx.Module):
    """The smoother ``S`` that a G-RANS iteration applies before and after the learned projection.

    A strategy object (static settings only, hashable, not callable): pass one as ``GRANS(smoother=...)``.
    Subclasses are `MultilevelSmoother` (the default) and `ChebyshevSmoother` (the paper's). Each
    carries what the solver asks of it: `smooth` (apply ``S``), `spectral_bound` (what the set-up stores for it),
    `uses_hierarchy` (the set-up builds a multigrid hierarchy), `default_refresh` and `auto_outer` (the outer step
    of ``GRANS(outer="auto")``).
    """

    uses_hierarchy = False
    pretrained_network = False  # GRANS.pretrained() loads the shipped network with it

    @abc.abstractmethod
    def smooth(self, op: Any, r: Any) -> Any:
        """``S(r)`` on the padded vectors of the `GRANSOperator` ``op`` (set up for this smoother)."""

    def spectral_bound(self, A: Any, spd_like: bool) -> Any:
        """The bound of ``ρ(D⁻¹A)`` that the set-up stores for `smooth` (the padded ``SparseMatrix`` ``A``): 1,
        unless the smoother's relaxation needs an estimate."""
        return jnp.ones((), A.dtype)

    def hierarchy(self, A: Any, dtype: Any) -> Any:
        """The multigrid hierarchy the set-up builds for the SciPy CSR matrix ``A`` (``None``: this smoother uses
        none)."""
        return None

    @abc.abstractmethod
    def default_refresh(self, max_steps: int) -> int:
        """The basis refresh period of ``GRANS(refresh=None)``."""

    @abc.abstractmethod
    def auto_outer(self, spd_like: bool, symmetric: bool) -> Any:
        """The outer step of ``GRANS(outer="auto")`` on a matrix of this class."""


class ChebyshevSmoother(AbstractSmoother):
    r"""Polynomial smoothing with ``degree`` products: Chebyshev on $D^{-1}A$ or ℓ1-Jacobi sweeps.

    On SPD-like matrices (symmetric, positive diagonal, non-negative row sums)
    $S(r) = p_{\mathrm{degree}}(D^{-1}A) D^{-1} r$, the Chebyshev polynomial for
    $[\lambda_{\max}/30, \lambda_{\max}]$ (``ChebyshevRelaxation(degree)``, with
    $\lambda_{\max}$ 1.1 times a power-iteration estimate at set-up); otherwise ``degree`` ℓ1-Jacobi sweeps
    (``JacobiRelaxation(omega=1, num_steps=degree)`` with $D_{ii} = \sum_j |a_{ij}|$). The paper's smoother; the
    shipped weights were trained with ``degree=3``, and ``GRANS.pretrained(smoother="chebyshev")`` runs them with
    the network every iteration.

    Attributes:
      degree: matrix-vector products per smoothing (a positive int).

    Raises:
      ValueError: ``degree`` is not a positive int.

    References:
      Adams, Brezina, Hu & Tuminaro, J. Comput. Phys. 188 (2003) (Chebyshev smoothers).

    Examples:
      >>> from icmlx.solvers import ChebyshevSmoother
      >>> ChebyshevSmoother(degree=4)
      ChebyshevSmoother(degree=4)
      >>> hash(ChebyshevSmoother()) == hash(ChebyshevSmoother(degree=3))
      True
      >>> ChebyshevSmoother(degree=4).relaxation(spd_like=True)  # the multigrid family's objects
      ChebyshevRelaxation(degree=4)
      >>> ChebyshevSmoother(degree=4).relaxation(spd_like=False)
      JacobiRelaxation(omega=1.0, num_steps=4)
    """

    degree: int = eqx.field(static=True, default=3)

    def __check_init__(self):
        _positive_int(self.degree, "degree", "ChebyshevSmoother")

    pretrained_network = True

    def relaxation(self, spd_like: bool) -> AbstractRelaxation:
        """The relaxation it runs on a matrix of this class: Chebyshev on SPD-like ones, else ℓ1-Jacobi."""
        if spd_like:
            return ChebyshevRelaxation(degree=self.degree)
        return JacobiRelaxation(omega=1.0, num_steps=self.degree)

    def spectral_bound(self, A: Any, spd_like: bool) -> Any:
        # Chebyshev needs a bound of the spectrum: 1.1 times a power-iteration estimate, capped by Gershgorin;
        # ℓ1-Jacobi has 1
        return _lambda_max_jit(A)[1] if spd_like else super().spectral_bound(A, spd_like)

    def smooth(self, op: Any, r: Any) -> Any:
        # ℓ1 row sums off SPD-like matrices bound ρ(D⁻¹A) by 1, the λ the operator then carries
        d = relaxation_diagonal(op.A, l1=not op.spd_like)
        # (a complex A: the real ℓ1 diagonal and bound cast to the complex dtype of r)
        return self.relaxation(op.spd_like).correction(op.A, (1.0 / d).astype(r.dtype), op.lambda_max.astype(r.dtype),
                                                       r)

    def default_refresh(self, max_steps: int) -> int:
        return 1  # the paper's residual-aware basis, every iteration

    def auto_outer(self, spd_like: bool, symmetric: bool) -> Any:
        from ._outer import ThreeTermStep

        return ThreeTermStep()


class MultilevelSmoother(AbstractSmoother):
    r"""One smoothed-aggregation V-cycle on the M-matrix envelope of ``A`` as the smoother (the default).

    The hierarchy is built at set-up by `smoothed_aggregation` (the builder `amg_setup` runs), on the
    M-matrix envelope ``Ã`` (`m_matrix_envelope`): standard aggregation of the graph of ``Ã``,
    Jacobi-smoothed prolongators, Galerkin coarse operators, Chebyshev pre/post-smoothing of ``degree`` on every
    level (`ChebyshevRelaxation`) and a dense inverse on the coarsest.
    $S(r) = B r \approx \tilde A^{-1} r$. Iteration counts stay nearly flat in ``n``. The V-cycle
    contracts the error in the energy norm: on SPD-like matrices the energy-norm
    `ThreeTermStep` converges; elsewhere a `FlexibleGCR`
    with ``memory >= 40`` is needed, since a residual-norm step with a short memory stalls.
    ``GRANS(outer="auto")`` (the default) picks these per matrix. For a complex ``A`` the envelope is real (moduli
    off the diagonal, $\operatorname{Re} a_{ii}$ on it) and the real cycle is applied to the real and imaginary
    parts of ``r`` (``S`` is real-linear).

    The cycle runs in float32 by default whatever the solver's working dtype: it is a preconditioner, so its
    rounding changes the search directions, not the answer. The outer step, its true residuals ``b − A x`` and
    the safeguard stay in the working dtype (float64 with x64 on), so the solve still reaches a float64
    tolerance, and the cycle moves half the bytes. ``dtype="auto"`` runs it in the working dtype.

    Attributes:
      degree: Chebyshev degree of the pre-/post-smoothing on each level (a positive int).
      max_coarse: largest coarsest level, solved by a dense inverse (a positive int).
      max_levels: cap on the number of levels (a positive int).
      dtype: ``"float32"`` (default) or ``"auto"`` (the solver's working dtype): the dtype of the hierarchy and
        of the cycle.

    Raises:
      ValueError: a setting is not a positive int, or ``dtype`` is not ``"float32"`` or ``"auto"``.

    References:
      Vaněk, Mandel & Brezina, Computing 56 (1996); Bell, Dalton & Olson, SIAM J. Sci. Comput. 34 (2012).

    Examples:
      >>> from icmlx.solvers import MultilevelSmoother
      >>> MultilevelSmoother(max_coarse=100)
      MultilevelSmoother(max_coarse=100)
      >>> MultilevelSmoother(dtype="auto")  # the cycle in the working dtype (float64 with x64 on)
      MultilevelSmoother(dtype='auto')
    """

    degree: int = eqx.field(static=True, default=2)
    max_coarse: int = eqx.field(static=True, default=400)
    max_levels: int = eqx.field(static=True, default=10)
    dtype: str = eqx.field(static=True, default="float32")

    def __check_init__(self):
        for name in ("degree", "max_coarse", "max_levels"):
            _positive_int(getattr(self, name), name, "MultilevelSmoother")
        if self.dtype not in ("float32", "auto"):
            raise ValueError("MultilevelSmoother: dtype must be 'float32' or 'auto' (the solver's working dtype), "
                             f"got dtype={self.dtype!r}")

    uses_hierarchy = True

    def smooth(self, op: Any, r: Any) -> Any:
        # in the hierarchy's dtype (float32 by default); the outer step, its true residuals and the safeguard stay
        # in the working dtype
        dt = op.hierarchy.coarse_inv.dtype
        if jnp.iscomplexobj(r):  # the real cycle of the envelope on the real and imaginary parts (S is real-linear)
            return jax.lax.complex(op.hierarchy(r.real.astype(dt)), op.hierarchy(r.imag.astype(dt))).astype(r.dtype)
        return op.hierarchy(r.astype(dt)).astype(r.dtype)

    def hierarchy(self, A: Any, dtype: Any) -> Any:
        """The V-cycle of the M-matrix envelope of ``A`` (SciPy CSR), in float32 (``dtype="float32"``) or in the
        working ``dtype``, padded to ``bucket_size(n)`` as the G-RANS operator is."""
        import numpy as np

        from .._amg._smoothed import smoothed_aggregation

        dt = np.dtype(np.float32) if self.dtype == "float32" else np.dtype(dtype)
        if np.iscomplexobj(A.data):  # a complex A: the real cycle of its (real) envelope, on each part of r
            from .._amg._hierarchy import m_matrix_envelope

            A = m_matrix_envelope(A)
        return smoothed_aggregation(A, max_coarse=self.max_coarse, max_levels=self.max_levels, degree=self.degree,
                                    dtype=dt)

    def default_refresh(self, max_steps: int) -> int:
        return max_steps  # the initial basis throughout

    def auto_outer(self, spd_like: bool, symmetric: bool) -> Any:
        from ._outer import FlexibleGCR, ThreeTermStep

        if spd_like:
            return ThreeTermStep(norm="energy")
        return FlexibleGCR(memory=GCR_MEMORY_SYMMETRIC if symmetric else GCR_MEMORY_NONSYMMETRIC)


_SMOOTHER_SHORTHANDS = {"chebyshev": ChebyshevSmoother, "multilevel": MultilevelSmoother}


def _as_smoother(smoother: Any) -> AbstractSmoother:
    """A smoother object from an object or its string shorthand (``"chebyshev"``, ``"multilevel"``)."""
    return as_strategy(smoother, AbstractSmoother, _SMOOTHER_SHORTHANDS, "smoother")
