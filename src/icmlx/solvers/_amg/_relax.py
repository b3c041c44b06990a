"""Relaxation inside a multigrid cycle, as strategy objects: damped Jacobi, Chebyshev and a multicolour symmetric
Gauss–Seidel, with their jittable kernels on one padded level of a :class:`~icmlx.solvers.MultilevelHierarchy`."""

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ..._inputs import to_device
from ._relaxation import chebyshev_sweep, jacobi_sweep

__all__ = ["AbstractRelaxation", "JacobiRelaxation", "ChebyshevRelaxation", "GaussSeidelRelaxation"]


def _check_int(value: Any, name: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int, got {name}={value!r}")


def _check_range(value: Any, name: str, owner: str, lo: float, hi: float) -> None:
    ok = isinstance(value, (int, float, np.floating)) and not isinstance(value, bool) and lo < value <= hi
    if not ok:
        raise ValueError(f"{owner}: {name} must be a number in ({lo:g}, {hi:g}], got {name}={value!r}")


class AbstractRelaxation(eqx.Module):
    """The smoother applied before and after each coarse correction of a multigrid cycle.

    A strategy object (static settings only, hashable): pass one as ``relaxation=`` to
    :func:`~icmlx.solvers.amg_setup` or :func:`~icmlx.solvers.solve`. Subclasses: :class:`JacobiRelaxation`,
    :class:`ChebyshevRelaxation` (the default for symmetric ``A``) and :class:`GaussSeidelRelaxation`. Each
    carries its behaviour: :meth:`relax` smooths one level, :attr:`needs_coloring` asks the set-up for a colouring.
    """

    needs_coloring = False

    @abc.abstractmethod
    def relax(self, A, dinv, lam, colors, b, x, zero: bool):
        """One pre- or post-smoothing of ``A x = b`` from ``x`` on one padded level (``zero``: ``x = 0``, skipping
        a product); ``dinv`` the inverse diagonal, ``lam`` the bound of ``ρ(D⁻¹A)``, ``colors`` the
        :class:`ColorBlocks` of the level (``None`` unless :attr:`needs_coloring`)."""


class _PolynomialRelaxation(AbstractRelaxation):
    """A polynomial smoother in ``D⁻¹A``: from ``x`` it equals ``x`` plus the same smoother from 0 applied to the
    residual."""

    @abc.abstractmethod
    def correction(self, A, dinv, lam, r):
        """The smoother from a zero guess applied to ``r``."""

    def relax(self, A, dinv, lam, colors, b, x, zero: bool):
        r = b if zero else b - A.mv(x)
        e = self.correction(A, dinv, lam, r)
        return e if zero else x + e


class JacobiRelaxation(_PolynomialRelaxation):
    r"""Damped Jacobi sweeps $x \leftarrow x + \frac{\omega}{\rho} D^{-1}(b - A x)$, ``ρ ≥ ρ(D⁻¹A)``.

    Attributes:
      omega: damping relative to ``1/ρ(D⁻¹A)`` in ``(0, 2]`` (``4/3`` minimises the largest amplification of the
        upper half of the spectrum).
      num_steps: sweeps per pre- and post-smoothing.

    Examples:
      >>> from icmlx.solvers import JacobiRelaxation
      >>> JacobiRelaxation(num_steps=2)
      JacobiRelaxation(num_steps=2)
    """

    omega: float = eqx.field(static=True, default=4.0 / 3.0)
    num_steps: int = eqx.field(static=True, default=1)

    def __check_init__(self):
        _check_range(self.omega, "omega", "JacobiRelaxation", 0.0, 2.0)
        _check_int(self.num_steps, "num_steps", "JacobiRelaxation")

    def correction(self, A, dinv, lam, r):
        return jacobi_sweep(A, r, omega=self.omega / lam, num_steps=self.num_steps, l1=False, dinv=dinv)


class ChebyshevRelaxation(_PolynomialRelaxation):
    r"""Chebyshev polynomial smoothing on $D^{-1}A$ for $[\rho/\mathrm{ratio}, \rho]$.

    ``degree`` matrix-vector products per smoothing; ``ρ`` is a safe upper bound of ``ρ(D⁻¹A)`` from the set-up.

    Attributes:
      degree: polynomial degree (a positive int).
      ratio: ``ρ / λ_min`` of the targeted interval, ``> 1``.

    References:
      Adams, Brezina, Hu & Tuminaro, J. Comput. Phys. 188 (2003).

    Examples:
      >>> from icmlx.solvers import ChebyshevRelaxation
      >>> ChebyshevRelaxation(degree=3)
      ChebyshevRelaxation(degree=3)
    """

    degree: int = eqx.field(static=True, default=2)
    ratio: float = eqx.field(static=True, default=30.0)

    def __check_init__(self):
        _check_int(self.degree, "degree", "ChebyshevRelaxation")
        _check_range(self.ratio, "ratio", "ChebyshevRelaxation", 1.0, float("inf"))

    def correction(self, A, dinv, lam, r):
        return chebyshev_sweep(A, r, lambda_max=lam, degree=self.degree, ratio=self.ratio, dinv=dinv)


class GaussSeidelRelaxation(AbstractRelaxation):
    r"""Multicolour symmetric Gauss–Seidel: the rows of one colour (an independent set of the matrix graph)
    relax at once, $x_c \leftarrow x_c + D_c^{-1}(b - A x)_c$, colours forward then backward.

    Every colour sees the updates of the colours before it, as Gauss–Seidel in the colour ordering; one
    symmetric sweep costs about two matrix-vector products. The colouring is made at set-up (Luby independent
    sets).

    Attributes:
      num_sweeps: symmetric sweeps per pre- and post-smoothing.

    References:
      Adams, "A distributed memory unstructured Gauss–Seidel algorithm for multigrid smoothers", SC 2001.

    Examples:
      >>> from icmlx.solvers import GaussSeidelRelaxation
      >>> GaussSeidelRelaxation(num_sweeps=2)
      GaussSeidelRelaxation(num_sweeps=2)
    """

    num_sweeps: int = eqx.field(static=True, default=1)

    def __check_init__(self):
        _check_int(self.num_sweeps, "num_sweeps", "GaussSeidelRelaxation")

    needs_coloring = True

    def relax(self, A, dinv, lam, colors, b, x, zero: bool):
        for _ in range(self.num_sweeps):  # static, small
            x = _gs_sweep(colors, b, x, reverse=False)
            x = _gs_sweep(colors, b, x, reverse=True)
        return x


class ColorBlocks(eqx.Module):
    """The rows of each colour of one level as a padded ELL block (padding rows have ``dinv = 0``)."""

    rows: Int[Array, "c m"]
    idx: Int[Array, "c k m"]
    val: Float[Array, "c k m"]
    dinv: Float[Array, "c m"]

    @classmethod
    def from_ell(cls, idx: np.ndarray, val: np.ndarray, d: np.ndarray, color: np.ndarray,
                 dtype: Any) -> "ColorBlocks":
        """From the host arrays ``(idx, val)`` (``[k, ≥ n]``) of a level's padded ELL operator (no stored zeros),
        its diagonal ``d`` and a colour per row (the ``n`` real rows)."""
        nc = int(color.max()) + 1
        counts = np.bincount(color, minlength=nc)
        m = max(8, -(-int(counts.max()) // 8) * 8)
        order = np.argsort(color, kind="stable")
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(order.size) - start[color[order]]
        rows = np.zeros((nc, m), np.int32)
        rows[color[order], slot] = order
        dinv = np.zeros((nc, m))
        dinv[color[order], slot] = 1.0 / d[order]
        # row r's k slots go to colour block color[r], position where[r]: one flat scatter of the (k, n) arrays
        n = color.size
        k = idx.shape[0]
        where = np.empty(n, np.int64)
        where[order] = slot
        dest = (color * (k * m) + where)[None, :] + (np.arange(k, dtype=np.int64) * m)[:, None]
        cidx = np.zeros((nc, k, m), np.int32)
        cval = np.zeros((nc, k, m))
        cidx.ravel()[dest] = idx[:, :n]
        cval.ravel()[dest] = val[:, :n]
        return cls(to_device(rows, np.int32), to_device(cidx, np.int32), to_device(cval, dtype),
                   to_device(dinv, dtype))


def _gs_sweep(cb: ColorBlocks, b, x, reverse: bool):
    nc = cb.rows.shape[0]

    def body(i, x):
        c = nc - 1 - i if reverse else i

        def slot(j, acc):
            return acc + cb.val[c, j] * x[cb.idx[c, j]]

        rows = cb.rows[c]
        ax = jax.lax.fori_loop(0, cb.idx.shape[1], slot, jnp.zeros(rows.shape, x.dtype))
        return x.at[rows].add(cb.dinv[c] * (b[rows] - ax))

    return jax.lax.fori_loop(0, nc, body, x)


def relax(strategy: AbstractRelaxation | None, A, dinv, lam, colors, b, x, zero: bool, degree: int):
    """One pre- or post-smoothing by ``strategy`` (``None``: Chebyshev of ``degree`` for ``[λ/30, λ]``, the
    smoother of :func:`~icmlx.solvers.smoothed_aggregation`)."""
    if strategy is None:
        strategy = ChebyshevRelaxation(degree=degree)
    return strategy.relax(A, dinv, lam, colors, b, x, zero)
