"""Feature bases $\\phi(x)$ (RBF, random Fourier, monomials, one of several chosen by an index) and the drift
that is linear in them, $f(x) = W^\\top\\phi(x)$ (`LinearDrift`). The function classes that fit $W$ are in
``_classes``."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._checks import check_values, is_traced
from .._inputs import is_dataframe
from .._repr import summarise
from .._types import PRNGKey, RealScalarLike
from ._data import ArrayOrFrame, as_real, check_count, check_finite, check_last_axis, check_real, check_scale

__all__ = [
    "RBFBasis",
    "FourierBasis",
    "PolynomialBasis",
    "LinearDrift",
    "SelectedBasis",
    "box_grid",
]


class RBFBasis(eqx.Module):
    r"""Gaussian RBF features $\phi_j(x) = v\,\exp(-\lVert x - c_j\rVert^2 / (2\ell^2))$.

    Attributes:
      centers: feature centres (or GP inducing points), shape ``(m, d)``.
      lengthscale: positive scalar lengthscale.
      variance: kernel variance ``v``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import RBFBasis
      >>> phi = RBFBasis(jnp.array([[0.0, 0.0], [1.0, 0.0]]), lengthscale=1.0)
      >>> [round(v, 4) for v in phi(jnp.array([1.0, 0.0])).tolist()]   # exp(-1/2), exp(0)
      [0.6065, 1.0]
      >>> phi(jnp.zeros((5, 3, 2))).shape                                # any leading axes
      (5, 3, 2)
    """

    centers: Float[Array, "m d"]
    lengthscale: Float[Array, ""]
    variance: Float[Array, ""]

    def __init__(self, centers, lengthscale=1.0, variance=1.0):
        centers = as_real(centers, "centers", "RBFBasis")
        if centers.ndim != 2 or centers.shape[0] < 1:
            raise ValueError(f"RBFBasis: centers must have shape (m, d) with m >= 1, got shape {centers.shape}")
        self.centers = check_finite(centers, "centers", "RBFBasis")
        dt = self.centers.dtype
        check_real(lengthscale, "lengthscale", "RBFBasis")
        check_real(variance, "variance", "RBFBasis")
        self.lengthscale = check_values(
            jnp.asarray(lengthscale, dt), lambda xp, v: ~(xp.isfinite(v) & (v > 0)),
            "RBFBasis: lengthscale must be positive and finite (a zero width comes from constant data); pass "
            "lengthscale > 0",
        )
        self.variance = check_values(jnp.asarray(variance, dt), lambda xp, v: ~(xp.isfinite(v) & (v > 0)),
                                     "RBFBasis: variance must be positive and finite; pass variance > 0")

    def __call__(self, x: ArrayOrFrame) -> Float[Array, "*batch m"]:
        x = as_real(x, "x", "RBFBasis")
        check_last_axis(x, self.centers.shape[1], "x (the states; d as in centers)", "RBFBasis")
        c = self.centers.astype(x.dtype)
        # scaled before squaring, so that data on any scale (1e20, 1e-20) neither overflows nor underflows; the
        # centres on the last axis, (..., d, m), so that the elementwise work runs along m, not along a short d
        z = (x[..., :, None] - c.T) / self.lengthscale.astype(x.dtype)
        r2 = jnp.sum(z * z, axis=-2)
        return self.variance.astype(x.dtype) * jnp.exp(-0.5 * r2)

    def __repr__(self) -> str:
        m, d = self.centers.shape
        return (f"RBFBasis(num_centers={m}, d={d}, lengthscale={summarise(self.lengthscale)}, "
                f"variance={summarise(self.variance)})")

    def gram(self) -> Float[Array, "m m"]:
        """Kernel matrix ``k(centers, centers)``."""
        return jax.vmap(self)(self.centers)


class FourierBasis(eqx.Module):
    r"""Random Fourier features $\phi_j(x) = \sqrt{2/m}\cos(\omega_j^\top x + b_j)$ (RBF kernel).

    Attributes:
      omegas: frequencies ``~ N(0, I / lengthscale^2)``, shape ``(m, d)``.
      phases: phases ``~ U(0, 2 pi)``, shape ``(m,)``.

    References:
      Rahimi & Recht, "Random Features for Large-Scale Kernel Machines", NeurIPS 2007.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.sde import FourierBasis
      >>> phi = FourierBasis.sample(jax.random.key(0), 64, 2)
      >>> phi(jnp.zeros(2)).shape
      (64,)
    """

    omegas: Float[Array, "m d"]
    phases: Float[Array, " m"]

    def __check_init__(self):
        if jnp.ndim(self.omegas) != 2 or jnp.shape(self.phases) != jnp.shape(self.omegas)[:1]:
            raise ValueError(f"FourierBasis: need omegas of shape (m, d) and phases of shape (m,), got "
                             f"{jnp.shape(self.omegas)} and {jnp.shape(self.phases)}")

    @staticmethod
    def sample(key: PRNGKey, m: int, d: int, lengthscale: float = 1.0, dtype=None) -> "FourierBasis":
        """Draw ``m`` random features for inputs of dimension ``d``.

        Raises:
          ValueError: ``m`` or ``d`` not a positive integer, ``lengthscale`` not finite and positive.
        """
        m = check_count(m, "m", "FourierBasis.sample")
        d = check_count(d, "d", "FourierBasis.sample")
        check_scale(lengthscale, "lengthscale", "FourierBasis.sample")
        dtype = dtype or jnp.zeros(()).dtype
        k1, k2 = jax.random.split(key)
        om = jax.random.normal(k1, (m, d), dtype) / lengthscale
        ph = jax.random.uniform(k2, (m,), dtype, 0.0, 2.0 * jnp.pi)
        return FourierBasis(om, ph)

    def __call__(self, x: ArrayOrFrame) -> Float[Array, "*batch m"]:
        x = as_real(x, "x", "FourierBasis")
        check_last_axis(x, self.omegas.shape[1], "x (the states; d as in omegas)", "FourierBasis")
        m = self.phases.shape[0]
        z = x @ self.omegas.astype(x.dtype).T + self.phases.astype(x.dtype)
        return jnp.sqrt(jnp.asarray(2.0 / m, x.dtype)) * jnp.cos(z)

    def __repr__(self) -> str:
        m, d = self.omegas.shape
        return f"FourierBasis(num_features={m}, d={d})"


class PolynomialBasis(eqx.Module):
    """Monomial features $\\prod_k x_k^{e_k}$ with total degree ``<= degree`` (constant included).

    With ``degree = 3`` this contains the Van der Pol drift exactly (the SFI package's default basis);
    with ``degree = 1`` it is the affine basis of the OU pipeline oracle.

    Attributes:
      exponents: static tuple of exponent tuples, one per feature.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import PolynomialBasis
      >>> b = PolynomialBasis(2, 2)
      >>> b.exponents
      ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0))
      >>> b(jnp.array([2.0, 3.0])).tolist()
      [1.0, 3.0, 9.0, 2.0, 6.0, 4.0]
    """

    exponents: tuple = eqx.field(static=True)

    def __init__(self, d: int, degree: int):
        d = check_count(d, "d", "PolynomialBasis")
        degree = check_count(degree, "degree", "PolynomialBasis", low=0)
        num = math.comb(d + degree, degree)
        if num > MAX_FEATURES:
            raise ValueError(f"PolynomialBasis: d={d}, degree={degree} has {num:,} monomial features (it grows as "
                             f"C(d + degree, degree)); the limit is {MAX_FEATURES:,}: lower degree")
        self.exponents = tuple(_exponents(d, degree))

    def __call__(self, x: ArrayOrFrame) -> Float[Array, "*batch m"]:
        x = as_real(x, "x", "PolynomialBasis")
        check_last_axis(x, len(self.exponents[0]), "x (the states)", "PolynomialBasis")
        feats = []
        for e in self.exponents:
            v = jnp.ones(x.shape[:-1], x.dtype)
            for k, p in enumerate(e):
                if p:
                    v = v * jax.lax.integer_pow(x[..., k], p)
            feats.append(v)
        return jnp.stack(feats, axis=-1)

    def __repr__(self) -> str:
        degree = max(sum(e) for e in self.exponents)
        return f"PolynomialBasis(d={len(self.exponents[0])}, degree={degree}, num_features={len(self.exponents)})"


#: Most monomial features `PolynomialBasis` builds.
MAX_FEATURES = 10_000


def _exponents(d: int, degree: int):
    """Exponent tuples of total degree ``<= degree`` in lexicographic order (that of ``itertools.product``),
    generated directly rather than by filtering all ``(degree + 1) ** d`` tuples."""
    if d == 1:
        yield from ((e,) for e in range(degree + 1))
        return
    for e in range(degree + 1):
        for rest in _exponents(d - 1, degree - e):
            yield (e, *rest)


class SelectedBasis(eqx.Module):
    r"""One of several bases, chosen by an index that may be traced: $\phi(x) = [\phi_i(x), 0]$ for ``i = index``.

    The chosen basis's features are padded with zeros to ``num_features``, the largest size among ``bases``, so
    every choice gives one shape: a class chosen inside a compiled program (`SelectedClass`) returns one drift
    type. Evaluation runs the chosen basis only (``lax.switch``), unless `jax.vmap` batches the index.

    Attributes:
      bases: the candidate bases (library bases or callables ``(d,) -> (m_i,)``).
      index: which one, an integer array of shape ``()``.
      sizes: the feature counts ``m_i`` (static).

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import PolynomialBasis, SelectedBasis
      >>> b = SelectedBasis((PolynomialBasis(1, 1), PolynomialBasis(1, 3)), jnp.array(0))
      >>> b(jnp.array([2.0])).tolist()   # linear monomials [1, x], padded to the cubic's four features
      [1.0, 2.0, 0.0, 0.0]
    """

    bases: tuple
    index: Int[Array, ""]
    sizes: tuple[int, ...] = eqx.field(static=True)

    def __init__(self, bases, index, sizes=None):
        bases = tuple(bases)
        if not bases:
            raise ValueError("SelectedBasis: bases must hold at least one basis")
        sizes = [_num_features(b) for b in bases] if sizes is None else sizes
        if None in sizes:
            raise ValueError(f"SelectedBasis: the feature count of a basis in {bases!r} is unknown; pass sizes=")
        self.bases = bases
        self.index = jnp.asarray(index, jnp.int32)
        self.sizes = tuple(int(m) for m in sizes)

    @property
    def num_features(self) -> int:
        """The padded feature count, ``max(sizes)``."""
        return max(self.sizes)

    def __call__(self, x: ArrayOrFrame) -> Float[Array, "*batch m"]:
        x = jnp.asarray(x)
        m = self.num_features

        def branch(b, k):
            def f(x):
                phi = b(x) if x.ndim == 1 or isinstance(b, _BROADCASTING) else jax.vmap(b)(
                    x.reshape(-1, x.shape[-1])).reshape(x.shape[:-1] + (k,))
                return jnp.concatenate([phi, jnp.zeros(phi.shape[:-1] + (m - k,), phi.dtype)], -1)
            return f

        branches = [branch(b, k) for b, k in zip(self.bases, self.sizes)]
        return jax.lax.switch(jnp.clip(self.index, 0, len(branches) - 1), branches, x)

    def __repr__(self) -> str:
        return f"SelectedBasis(index={summarise(self.index)}, bases={self.bases!r})"


class LinearDrift(eqx.Module):
    """A fitted drift ``f(x) = W^T phi(x)``, evaluated on states of shape ``(..., d)``.

    ``f(x)`` broadcasts over leading axes: a state ``(d,)``, a batch ``(n, d)`` or a grid ``(a, b, d)`` gives
    drifts of the same shape. NumPy arrays and lists are accepted; a pandas DataFrame (columns = coordinates,
    reordered by `names` when they are set) gives a DataFrame with the same index and columns. A user
    ``basis`` that takes one state ``(d,)`` is ``vmap``-ped over the leading axes.

    Attributes:
      basis: the feature map.
      weights: shape ``(m, d)``.
      names: coordinate names (from a DataFrame the drift was fitted on), or ``None``.
      covariance: the posterior covariance $C$ of each column of ``weights``, shape ``(m, m)``, for a drift fitted
        by `SparseGP.fit` / `RidgeRegression.fit` (or `infer_drift`); one per column, shape ``(d, m, m)``, for
        `conservative_drift`'s sandwich covariance; ``None`` otherwise. See `std`.

    Raises:
      ValueError: if the last axis of ``x`` is not ``d``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import LinearDrift, PolynomialBasis
      >>> f = LinearDrift(PolynomialBasis(2, 1), jnp.array([[0.0, 0.0], [0.0, -1.0], [-1.0, 0.0]]))  # f = -x
      >>> f(jnp.array([2.0, 3.0])).tolist()
      [-2.0, -3.0]
      >>> f(jnp.ones((4, 5, 2))).shape
      (4, 5, 2)
    """

    basis: eqx.Module
    weights: Float[Array, "m d"]
    names: tuple[str, ...] | None = eqx.field(static=True, default=None)
    covariance: Float[Array, "m m"] | Float[Array, "d m m"] | None = None

    def __check_init__(self):
        m = _num_features(self.basis)
        if jnp.ndim(self.weights) != 2 or (m is not None and jnp.shape(self.weights)[0] != m):
            raise ValueError(f"LinearDrift: weights must have shape (m, d) with m = {m} (the features of the basis), "
                             f"got shape {jnp.shape(self.weights)}")

    def __call__(self, x: ArrayOrFrame) -> ArrayOrFrame:
        frame = None
        if is_dataframe(x):
            frame = x
            if self.names is not None and set(map(str, x.columns)) == set(self.names):
                frame = x[[c for n in self.names for c in x.columns if str(c) == n]]
            x = frame.to_numpy()
        x = as_real(x, "x", "drift", None if _floating(x) else self.weights.dtype)
        d = self.weights.shape[-1]
        if x.ndim == 0 or x.shape[-1] != d:
            raise ValueError(f"drift: x must be states of shape (..., d) with d = {d}, got shape {x.shape}")
        W = self.weights.astype(x.dtype)
        if x.ndim == 1 or isinstance(self.basis, _BROADCASTING):
            out = self.basis(x) @ W
        else:
            out = (jax.vmap(self.basis)(x.reshape(-1, d)) @ W).reshape(x.shape)
        if frame is not None:
            import numpy as np

            return type(frame)(np.asarray(out), index=frame.index, columns=frame.columns)
        return out

    def std(self, x: ArrayOrFrame) -> Float[Array, "*batch d"]:
        r"""Pointwise posterior standard error of the drift, $\sqrt{\phi(x)^\top C\,\phi(x)}$ per coordinate.

        For the Euler path likelihood with isotropic noise and the class's Gaussian prior, every column of the
        weights has posterior covariance $C = \sigma^2 (\sum_i w_i \Delta t_i \phi_i\phi_i^\top + \sigma^2 P)^{-1}$,
        so all coordinates share one standard error. It is the spread of the estimate given the class (not its
        bias at a coarse interval, nor the EM's missing information). A covariance per column (shape
        ``(d, m, m)``, from `conservative_drift`) gives coordinate $k$ the error $\sqrt{\phi^\top C_k\phi}$.

        Args:
          x: states of shape ``(..., d)``.

        Returns:
          Shape ``(..., d)``, like ``drift(x)``.

        Raises:
          ValueError: the drift has no ``covariance`` (it was not fitted by a library class), or ``x`` of the
            wrong shape.

        Examples:
          >>> import jax, jax.numpy as jnp
          >>> from icmlx.sde import PolynomialBasis, RidgeRegression
          >>> x = jax.random.normal(jax.random.key(0), (400, 1))
          >>> f = RidgeRegression(PolynomialBasis(1, 1), 1e-6).fit(x, 0.1 * jax.random.normal(
          ...     jax.random.key(1), (400, 1)), 0.01, 1.0)    # drift 0, sigma 1, dt 0.01
          >>> round(float(f.std(jnp.zeros(1))[0]), 1)          # about sigma / sqrt(sum dt) = 1 / 2
          0.5
        """
        if self.covariance is None:
            raise ValueError("std: this drift carries no weight covariance; fit it with a library class "
                             "(SparseGP, RidgeRegression, naive_drift, conservative_drift or infer_drift) to get "
                             "standard errors")
        x = as_real(x, "x", "drift.std", None if _floating(x) else self.weights.dtype)
        d = self.weights.shape[-1]
        if x.ndim == 0 or x.shape[-1] != d:
            raise ValueError(f"drift.std: x must be states of shape (..., d) with d = {d}, got shape {x.shape}")
        C = self.covariance.astype(x.dtype)
        if x.ndim == 1 or isinstance(self.basis, _BROADCASTING):
            phi = self.basis(x)
        else:
            phi = jax.vmap(self.basis)(x.reshape(-1, d)).reshape(x.shape[:-1] + (-1,))
        if C.ndim == 3:  # one covariance per coordinate
            var = jnp.einsum("...m,kml,...l->...k", phi, C, phi)
            return jnp.sqrt(jnp.maximum(var, 0.0))
        var = jnp.sum((phi @ C) * phi, -1)
        return jnp.broadcast_to(jnp.sqrt(jnp.maximum(var, 0.0))[..., None], x.shape)

    def __repr__(self) -> str:
        tail = f", names={self.names!r}" if self.names is not None else ""
        return f"LinearDrift(basis={self.basis!r}, weights={summarise(self.weights)}{tail})"


_BROADCASTING = (RBFBasis, FourierBasis, PolynomialBasis, SelectedBasis)


def _floating(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating)


def _num_features(basis) -> int | None:
    """The number of features of a library basis (``None`` for a user callable)."""
    if isinstance(basis, RBFBasis):
        return basis.centers.shape[0]
    if isinstance(basis, FourierBasis):
        return basis.phases.shape[0]
    if isinstance(basis, PolynomialBasis):
        return len(basis.exponents)
    if isinstance(basis, SelectedBasis):
        return basis.num_features
    return None


def _input_dim(basis) -> int | None:
    """The state dimension ``d`` of a library basis (``None`` for a user callable)."""
    if isinstance(basis, RBFBasis):
        return basis.centers.shape[1]
    if isinstance(basis, PolynomialBasis):
        return len(basis.exponents[0])
    if isinstance(basis, FourierBasis):
        return basis.omegas.shape[1]
    if isinstance(basis, SelectedBasis):
        return _input_dim(basis.bases[0])
    return None


#: Largest grid `box_grid` builds (a float32 grid of this many points in d = 4 is 64 MiB).
MAX_GRID_POINTS = 2**22


def box_grid(points: ArrayOrFrame, num_per_dim: int, pad: RealScalarLike = 0.0) -> Float[Array, "m d"]:
    """Regular grid of ``num_per_dim ** d`` points over the bounding box of ``points`` widened by ``pad``.

    Args:
      points: data, shape ``(n, d)`` (or any leading shape; a DataFrame's columns are the coordinates).
      num_per_dim: grid points per axis.
      pad: absolute widening of the box on every side.

    Returns:
      Grid points, shape ``(num_per_dim ** d, d)``, the last axis varying fastest.

    Raises:
      ValueError: ``num_per_dim < 1``, or a grid of more than ``MAX_GRID_POINTS`` (``2**22``) points: the size
        grows as ``num_per_dim ** d``; lower ``num_per_dim``. Empty or non-finite ``points``, a non-finite
        ``pad``, or a box of zero or negative width on some axis (constant data: pass ``pad > 0``).
      TypeError: complex ``points``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from icmlx.sde import box_grid
      >>> box_grid(jnp.array([[0.0, 0.0], [1.0, 2.0]]), 3).tolist()[:4]
      [[0.0, 0.0], [0.0, 1.0], [0.0, 2.0], [0.5, 0.0]]
    """
    points = as_real(points, "points", "box_grid")
    if points.ndim == 0 or points.size == 0:
        raise ValueError(f"box_grid: points must be a non-empty array of shape (n, d), got shape {points.shape}")
    points = points.reshape(-1, points.shape[-1])
    num_per_dim = check_count(num_per_dim, "num_per_dim", "box_grid")
    check_real(pad, "pad", "box_grid")
    d = points.shape[1]
    if num_per_dim**d > MAX_GRID_POINTS:
        raise ValueError(
            f"box_grid: num_per_dim={num_per_dim} in d={d} is a grid of {num_per_dim**d:,} points (it grows as "
            f"num_per_dim ** d); use num_per_dim <= {int(MAX_GRID_POINTS ** (1 / d) + 1e-9)} in d={d}"
        )
    points = check_finite(points, "points", "box_grid")
    pad_given = pad
    host = not is_traced((points, pad))
    if host:  # the box, mesh and stacking on the host (exact): eagerly each op was a program per shape
        dtype = jnp.result_type(points, pad)  # JAX's promotion of the points with pad, as on the device
        p = np.asarray(points).astype(dtype)
        pad = np.asarray(pad, dtype)
        lo, hi = p.min(axis=0) - pad, p.max(axis=0) + pad
    else:
        lo = jnp.min(points, axis=0) - pad
        hi = jnp.max(points, axis=0) + pad
    xp = np if host else jnp
    bad_width = (lambda xp, v: v[0] >= v[1]) if num_per_dim > 1 else (lambda xp, v: v[0] > v[1])
    box = check_values(xp.stack([lo, hi]), bad_width,
                       f"box_grid: the box (widened by pad={pad_given}) has zero or negative width on some axis "
                       "(constant data, or a negative pad); pass pad > 0")
    lo, hi = box[0], box[1]
    # the axes are JAX's linspace either way (one program per num_per_dim and dtype, whatever the data)
    axes = [jnp.linspace(lo[i], hi[i], num_per_dim) for i in range(d)]
    if host:
        mesh = np.meshgrid(*(np.asarray(a) for a in axes), indexing="ij")
        return jax.device_put(np.stack([m.reshape(-1) for m in mesh], axis=-1))
    mesh = jnp.meshgrid(*axes, indexing="ij")
    return jnp.stack([m.reshape(-1) for m in mesh], axis=-1)
