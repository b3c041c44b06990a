"""P1 finite elements on triangle meshes, assembled in JAX with segment sums."""

import dataclasses
import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..._checks import check_int, check_values
from ..._types import PRNGKey
from .._convert import positive_int
from .._sparse import SparseMatrix

__all__ = [
    "Mesh",
    "FEMProblem",
    "EQUATIONS",
    "unit_square_mesh",
    "mesh_from_arrays",
    "quadrature_points",
    "assemble_p1",
    "random_field",
    "resonance_gap",
    "make_problem",
]

EQUATIONS = ("poisson", "reaction", "advection", "helmholtz")

# 3-point rule on the reference triangle (0,0),(1,0),(0,1); exact for degree 2.
_QX = np.array([[1 / 6, 1 / 6], [2 / 3, 1 / 6], [1 / 6, 2 / 3]])
_QW = np.array([1 / 6, 1 / 6, 1 / 6])
# P1 shape functions at those points: phi_a(x_q) -> [q, a]
_PHI = np.stack([1 - _QX[:, 0] - _QX[:, 1], _QX[:, 0], _QX[:, 1]], axis=1)


@dataclasses.dataclass(frozen=True, eq=False)
class Mesh:
    """A triangle mesh with the static index maps for assembly and Dirichlet condensation.

    Setup-time object (NumPy arrays, not a pytree). Build with ``unit_square_mesh`` or ``mesh_from_arrays``.

    Attributes:
      points: ``float64[n_nodes, 2]`` vertex coordinates.
      triangles: ``int32[n_el, 3]`` vertex indices (counter-clockwise or not; areas use ``|det J|``).
      dirichlet: ``bool[n_nodes]`` nodes with homogeneous Dirichlet conditions.
      interior: ``int32[n]`` the free nodes (the unknowns), in increasing order.
      slot: ``int32[n_el * 9]`` COO slot of each local stiffness entry (``nnz`` = dropped).
      rows: ``int32[nnz]`` row indices of the condensed COO pattern.
      cols: ``int32[nnz]`` column indices of the condensed COO pattern.
      load_slot: ``int32[n_el * 3]`` unknown index of each local load entry (``n`` = dropped).
    """

    points: np.ndarray
    triangles: np.ndarray
    dirichlet: np.ndarray
    interior: np.ndarray
    slot: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    load_slot: np.ndarray

    @property
    def n(self) -> int:
        return int(self.interior.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.rows.shape[0])

    @property
    def h(self) -> float:
        e = self.points[self.triangles[:, [1, 2, 0]]] - self.points[self.triangles]
        return float(np.sqrt((e**2).sum(-1)).max())


def mesh_from_arrays(points: Any, triangles: Any, dirichlet: Any | None = None) -> Mesh:
    """Build a ``Mesh`` (with condensation maps) from vertex and triangle arrays.

    Args:
      points: ``float[n_nodes, 2]`` (or ``[2, n_nodes]``, the scikit-fem layout, if ``n_nodes != 2``).
      triangles: ``int[n_el, 3]`` (or ``[3, n_el]``).
      dirichlet: ``bool[n_nodes]`` constrained nodes; default: nodes on the boundary of the unit square.

    Returns:
      A ``Mesh``.

    Examples:
      >>> from icmlx.solvers.fem import mesh_from_arrays
      >>> m = mesh_from_arrays([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.5]],
      ...                      [[0, 1, 4], [1, 3, 4], [3, 2, 4], [2, 0, 4]])
      >>> m.n, m.nnz
      (1, 1)
    """
    p = np.asarray(points, np.float64)
    t = np.asarray(triangles, np.int64)
    if p.ndim != 2 or t.ndim != 2:
        raise ValueError(f"points and triangles must be 2-D, got {p.shape=}, {t.shape=}")
    if p.shape[1] != 2 and p.shape[0] == 2:
        p = p.T
    if t.shape[1] != 3 and t.shape[0] == 3:
        t = t.T
    if p.shape[1] != 2 or t.shape[1] != 3:
        raise ValueError(f"need points [n, 2] and triangles [n_el, 3], got {p.shape=}, {t.shape=}")
    if not np.all(np.isfinite(p)):
        raise ValueError("mesh_from_arrays: points has NaN or Inf coordinates; fix them first")
    if t.size and (t.min() < 0 or t.max() >= p.shape[0]):
        raise ValueError(f"mesh_from_arrays: triangle indices out of range: they must lie in [0, {p.shape[0]}) (one "
                         "per point), got "
                         f"values in [{t.min()}, {t.max()}]")
    e1, e2 = p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]]
    area2 = np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
    scale = max(float(np.ptp(p, axis=0).max()) if p.size else 0.0, np.finfo(np.float64).tiny)
    flat = area2 <= 1e-12 * scale**2  # zero-area triangles: their shape-function gradients are infinite
    if np.any(flat):
        raise ValueError(f"mesh_from_arrays: {int(flat.sum())} degenerate (zero-area) triangle(s), first "
                         f"{t[np.argmax(flat)].tolist()}; remove them or fix the points")
    if dirichlet is None:
        tol = 1e-12
        dirichlet = ((p[:, 0] < tol) | (p[:, 0] > 1 - tol) | (p[:, 1] < tol) | (p[:, 1] > 1 - tol))
    dirichlet = np.asarray(dirichlet, bool)
    if dirichlet.shape != (p.shape[0],):
        raise ValueError(f"mesh_from_arrays: dirichlet must be a bool per point, shape ({p.shape[0]},), got "
                         f"{dirichlet.shape}")
    interior = np.nonzero(~dirichlet)[0]
    n = interior.shape[0]
    gmap = np.full(p.shape[0], -1, np.int64)
    gmap[interior] = np.arange(n)
    gi = gmap[t[:, :, None]].repeat(3, axis=2).reshape(-1)  # local entry (a, b): row = node a
    gj = gmap[t[:, None, :]].repeat(3, axis=1).reshape(-1)
    keep = (gi >= 0) & (gj >= 0)
    key = gi * n + gj
    uniq, inv = np.unique(key[keep], return_inverse=True)
    slot = np.full(key.shape[0], uniq.shape[0], np.int64)
    slot[keep] = inv
    lg = gmap[t].reshape(-1)
    load_slot = np.where(lg >= 0, lg, n)
    return Mesh(points=p, triangles=t.astype(np.int32), dirichlet=dirichlet,
                interior=interior.astype(np.int32), slot=slot.astype(np.int32),
                rows=(uniq // max(n, 1)).astype(np.int32), cols=(uniq % max(n, 1)).astype(np.int32),
                load_slot=load_slot.astype(np.int32))


def unit_square_mesh(refine: int) -> Mesh:
    """Structured "union-jack" triangulation of the unit square with ``2^(refine+1)`` cells per side.

    Same node count as ``skfem.MeshTri.init_sqsymmetric().refined(refine)``: interior unknowns
    961 (refine 4), 3,969 (5), 16,129 (6), 65,025 (7). Boundary nodes are Dirichlet.

    Args:
      refine: refinement level (``>= 0``).

    Returns:
      A ``Mesh``.

    Examples:
      >>> from icmlx.solvers.fem import unit_square_mesh
      >>> unit_square_mesh(4).n
      961
    """
    refine = check_int(refine, "refine", where="unit_square_mesh", minimum=0, maximum=9)
    N = 2 ** (refine + 1)
    x = np.linspace(0.0, 1.0, N + 1)
    X, Y = np.meshgrid(x, x, indexing="ij")
    pts = np.stack([X.ravel(), Y.ravel()], axis=1)
    i, j = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    i, j = i.ravel(), j.ravel()
    v00 = i * (N + 1) + j
    v10 = (i + 1) * (N + 1) + j
    v01 = i * (N + 1) + j + 1
    v11 = (i + 1) * (N + 1) + j + 1
    flip = (i + j) % 2 == 1
    t1 = np.where(flip[:, None], np.stack([v00, v10, v01], 1), np.stack([v00, v10, v11], 1))
    t2 = np.where(flip[:, None], np.stack([v10, v11, v01], 1), np.stack([v00, v11, v01], 1))
    return mesh_from_arrays(pts, np.concatenate([t1, t2]))


def quadrature_points(mesh: Mesh) -> Float[Array, "n_el 3 2"]:
    """Physical coordinates of the 3 quadrature points of every element (float64 NumPy → JAX)."""
    _check_mesh(mesh, "quadrature_points")
    p = mesh.points[mesh.triangles]  # [n_el, 3, 2]
    xq = np.einsum("qa,ead->eqd", _PHI, p)
    return jnp.asarray(xq)


def _check_mesh(mesh: Any, where: str) -> None:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"{where}: mesh must be a Mesh (from unit_square_mesh or mesh_from_arrays), got "
                        f"{type(mesh).__name__}")


def _coefficient(value: Any, name: str, shape: tuple[int, ...], dtype: Any, nonnegative: bool = False) -> Array:
    """A coefficient broadcast to ``shape``, named in the error when its shape or values are wrong."""
    v = value if isinstance(value, jax.core.Tracer) else jnp.asarray(value)
    try:
        v = jnp.broadcast_to(v.astype(dtype), shape)
    except ValueError:
        raise ValueError(f"assemble_p1: {name} must be a number or an array of shape {shape} (one value per "
                         f"element and quadrature point), got shape {jnp.shape(value)}") from None
    need = "finite and >= 0" if nonnegative else "finite"
    bad = (lambda xp, x: ~(xp.isfinite(x) & (x >= 0))) if nonnegative else (lambda xp, x: ~xp.isfinite(x))
    return check_values(v, bad, f"assemble_p1: {name} must be {need} everywhere"
                        + (" (a diffusion coefficient; 0 assembles the mass matrix alone)" if nonnegative else "")
                        + "; fix its values")


def _geometry(mesh: Mesh, dtype):
    p = mesh.points[mesh.triangles]
    J = np.stack([p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]], axis=2)  # [e, d, k]: dx_d/dxi_k
    det = J[:, 0, 0] * J[:, 1, 1] - J[:, 0, 1] * J[:, 1, 0]
    Jinv = np.stack([np.stack([J[:, 1, 1], -J[:, 0, 1]], 1), np.stack([-J[:, 1, 0], J[:, 0, 0]], 1)],
                    1) / det[:, None, None]  # [e, k, d]
    gref = np.array([[-1.0, -1.0], [1.0, 0.0], [0.0, 1.0]])  # [a, k]
    grad = np.einsum("ak,ekd->ead", gref, Jinv)
    return jnp.asarray(np.abs(det), dtype), jnp.asarray(grad, dtype)


def assemble_p1(
    mesh: Mesh,
    *,
    kappa: Float[Array, "n_el 3"] | float = 1.0,
    reaction: Float[Array, "n_el 3"] | float = 0.0,
    beta: Float[Array, "2"] | tuple[float, float] = (0.0, 0.0),
    source: Float[Array, "n_el 3"] | float = 1.0,
) -> tuple[SparseMatrix, Float[Array, " n"]]:
    r"""Assemble the P1 system of $-\nabla\cdot(\kappa\nabla u) + \beta\cdot\nabla u + c\,u = f$
    with homogeneous Dirichlet conditions.

    $$
    A_{ij} = \int \kappa \nabla\phi_j\cdot\nabla\phi_i + (\beta\cdot\nabla\phi_j)\phi_i
    + c\,\phi_j\phi_i, \qquad b_i = \int f \phi_i
    $$

    using the 3-point degree-2 rule (points ``(1/6,1/6), (2/3,1/6), (1/6,2/3)``, the scikit-fem default
    for P1), element matrices in JAX, and a ``segment_sum`` into the condensed COO pattern. A negative
    ``reaction`` gives Helmholtz. Traceable: wrap in ``jax.jit`` with the mesh closed over.

    Args:
      mesh: a ``Mesh``.
      kappa: diffusion at the quadrature points ``[n_el, 3]`` or a constant (finite, ``>= 0``).
      reaction: reaction coefficient ``c`` at the quadrature points or a constant.
      beta: constant advection velocity ``(2,)``.
      source: ``f`` at the quadrature points or a constant.

    Returns:
      ``(A, b)``: the condensed ``SparseMatrix`` (``n × n``) and load vector ``float[n]``, in the default
      float dtype (float64 under ``JAX_ENABLE_X64``).

    Raises:
      ValueError: a coefficient of the wrong shape or with NaN/Inf entries, a negative ``kappa`` (checked on the
        host for concrete input, by ``eqx.error_if`` under ``jit``). TypeError: ``mesh`` is not a ``Mesh``.

    Examples:
      >>> from icmlx.solvers.fem import unit_square_mesh, assemble_p1
      >>> A, b = assemble_p1(unit_square_mesh(1))
      >>> A.shape, round(float(A.as_matrix()[4, 4]), 6)
      ((9, 9), 4.0)
    """
    _check_mesh(mesh, "assemble_p1")
    dtype = jnp.zeros(()).dtype
    det, grad = _geometry(mesh, dtype)
    n_el = mesh.triangles.shape[0]
    kq = _coefficient(kappa, "kappa", (n_el, 3), dtype, nonnegative=True)
    cq = _coefficient(reaction, "reaction", (n_el, 3), dtype)
    fq = _coefficient(source, "source", (n_el, 3), dtype)
    if np.shape(beta) != (2,):
        raise ValueError(f"assemble_p1: beta must be a velocity of shape (2,), got shape {np.shape(beta)}")
    bvec = _coefficient(beta, "beta", (2,), dtype)
    w = jnp.asarray(_QW, dtype)
    phi = jnp.asarray(_PHI, dtype)
    kbar = (kq * w).sum(1) * det  # ∫ kappa over the element (gradients are constant)
    stiff = kbar[:, None, None] * jnp.einsum("eid,ejd->eij", grad, grad)
    mass = jnp.einsum("eq,q,qi,qj->eij", cq * det[:, None], w, phi, phi)
    bgrad = jnp.einsum("d,ejd->ej", bvec, grad)  # beta . grad phi_j
    adv = (det / 6.0)[:, None, None] * bgrad[:, None, :] * jnp.ones((1, 3, 1), dtype)
    local = (stiff + mass + adv).reshape(-1)
    nnz = mesh.nnz
    vals = jax.ops.segment_sum(local, jnp.asarray(mesh.slot), num_segments=nnz + 1)[:nnz]
    load = jnp.einsum("eq,q,qi->ei", fq * det[:, None], w, phi).reshape(-1)
    b = jax.ops.segment_sum(load, jnp.asarray(mesh.load_slot), num_segments=mesh.n + 1)[: mesh.n]
    with jax.ensure_compile_time_eval():  # the pattern stays concrete under jit (solve() sets up from it)
        rows, cols = jnp.asarray(mesh.rows), jnp.asarray(mesh.cols)
    A = SparseMatrix(rows, cols, vals, (mesh.n, mesh.n))
    return A, b


def random_field(key: PRNGKey, x: Float[Array, "... 2"], *, num_modes: int = 6,
                 decay: float = 2.0) -> Float[Array, "..."]:
    r"""A smooth random Fourier field with unit variance (in expectation).

    $$
    g(x) = \frac{\sum_{k} a_k (1+|k|^2)^{-\mathrm{decay}/2}
    \cos(\pi k\cdot x + \varphi_k)}{\sqrt{\tfrac12\sum_k (1+|k|^2)^{-\mathrm{decay}}}}
    $$

    over integer wave vectors ``k ∈ {0..num_modes-1}²``, ``a_k ~ N(0,1)``, ``φ_k ~ U(0, 2π)``.

    Args:
      key: a JAX PRNG key.
      x: points ``[..., 2]``.
      num_modes: modes per axis (static).
      decay: spectral decay exponent.

    Returns:
      ``g(x)`` with shape ``x.shape[:-1]``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from icmlx.solvers.fem import random_field
      >>> random_field(jax.random.key(0), jnp.zeros((4, 2))).shape
      (4,)
    """
    positive_int(num_modes, "num_modes", "random_field")
    if not (isinstance(decay, jax.core.Tracer) or math.isfinite(decay)):
        raise ValueError(f"random_field: decay must be a finite number, got {decay=!r}")
    x = x if isinstance(x, jax.core.Tracer) else jnp.asarray(x)
    if x.ndim < 1 or x.shape[-1] != 2:
        raise ValueError(f"random_field: x must hold 2-D points, shape [..., 2], got shape {x.shape}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    k1, k2 = jax.random.split(key)
    kk = jnp.stack(jnp.meshgrid(jnp.arange(num_modes), jnp.arange(num_modes), indexing="ij"), -1)
    kk = kk.reshape(-1, 2).astype(x.dtype)
    amp = (1.0 + (kk**2).sum(-1)) ** (-decay / 2)
    a = jax.random.normal(k1, amp.shape, x.dtype) * amp
    ph = jax.random.uniform(k2, amp.shape, x.dtype, 0.0, 2 * math.pi)
    g = jnp.cos(math.pi * (x @ kk.T) + ph) @ a
    return g / jnp.sqrt(0.5 * (amp**2).sum())


def resonance_gap(k: float) -> float:
    r"""Relative distance of $k^2$ to the Dirichlet Laplacian spectrum of the unit square.

    $$
    \mathrm{gap}(k) = \min_{m,l\ge 1} |\pi^2(m^2+l^2) - k^2| / k^2
    $$

    The continuous spectrum; the P1 eigenvalues lie above it by $O(h^2)$ relative, so keep a
    margin (``make_problem`` rejects ``gap < 0.05``).

    Args:
      k: wave number (Python float).

    Returns:
      The gap (Python float).

    Examples:
      >>> from icmlx.solvers.fem import resonance_gap
      >>> round(resonance_gap(12.0), 3), round(resonance_gap(10.0), 3)
      (0.109, 0.013)
    """
    k = float(k)
    if not (k > 0 and math.isfinite(k)):
        raise ValueError(f"wave number must be a finite number > 0, got {k=}")
    M = int(k / math.pi) + 3
    if M > 10**7:
        raise ValueError(f"resonance_gap: k={k:g} is too large (the Dirichlet eigenvalues near k² are spaced "
                         "far below k²'s float64 resolution); use k < 3e7")
    # for each m, only the l nearest to sqrt(k²/π² − m²) can give the minimum: O(M) work, not O(M²)
    m = np.arange(1, M + 1, dtype=np.float64)
    target = np.sqrt(np.maximum(k * k / math.pi**2 - m * m, 1.0))
    ls = np.clip(np.floor(target)[:, None] + np.arange(0, 2)[None, :], 1, None)
    lam = math.pi**2 * (m[:, None] ** 2 + ls**2)
    return float(np.abs(lam - k * k).min() / (k * k))


class FEMProblem(eqx.Module):
    """A condensed FEM system with its description.

    Attributes:
      A: the ``SparseMatrix`` (``n × n``).
      b: the load vector ``float[n]``.
      equation: one of ``EQUATIONS`` (static).
      param: the equation's main parameter (contrast, c, ``‖β‖`` or k; static).
      absorption: the Helmholtz absorption α (0: a real matrix; static).
    """

    A: SparseMatrix
    b: Float[Array, " n"]
    equation: str = eqx.field(static=True)
    param: float = eqx.field(static=True)
    absorption: float = eqx.field(static=True, default=0.0)


_DEFAULTS = {"poisson": 2.0, "reaction": 100.0, "advection": 40.0, "helmholtz": 12.0}


def make_problem(
    key: PRNGKey,
    mesh: Mesh,
    equation: str,
    *,
    param: float | None = None,
    shift: float = 0.0,
    min_gap: float = 0.05,
    absorption: float = 0.0,
) -> FEMProblem:
    r"""A random instance of one of the four model equations on ``mesh``.

    - ``poisson``: $-\nabla\cdot(e^{\sigma g}\nabla u) = f$, contrast $\sigma$ = ``param``
      (default 2, i.e. $\kappa$ spans ~two decades).
    - ``reaction``: $-\nabla\cdot(e^{g}\nabla u) + c u = f$, ``c = param`` (default 100).
    - ``advection``: $-\Delta u + \beta\cdot\nabla u = f$, $\|\beta\|$ = ``param``
      (default 40), random direction. Nonsymmetric.
    - ``helmholtz``: $-\Delta u - k^2 (1 + 0.02 \tanh g) u = f$, ``k = param`` (default 12). Symmetric
      indefinite; rejected (ValueError) when ``resonance_gap(k) < min_gap``. With ``absorption`` $\alpha > 0$:
      $-\Delta u - k^2 (1 + 0.02 \tanh g)(1 + i\alpha) u = f$, complex symmetric (``A`` complex, ``b`` real;
      the resonance filter is still applied).

    ``shift`` rescales the parameter by ``(1 + shift)`` (the ±70% robustness protocol). The source
    $f = 1 + g_f$ is a random smooth field.

    Args:
      key: JAX PRNG key.
      mesh: a ``Mesh``.
      equation: one of ``EQUATIONS``.
      param: main parameter (default per equation).
      shift: relative parameter shift in ``(-1, ∞)``.
      min_gap: Helmholtz resonance filter threshold.
      absorption: Helmholtz absorption $\alpha \ge 0$ (default 0: a real matrix); other equations take only 0.

    Returns:
      A ``FEMProblem``.

    Raises:
      ValueError: unknown equation, ``shift <= -1``, a near-resonant Helmholtz wave number, or ``absorption``
        negative, not finite, or nonzero for an equation other than ``helmholtz``.

    Examples:
      >>> import jax
      >>> from icmlx.solvers.fem import unit_square_mesh, make_problem
      >>> pb = make_problem(jax.random.key(0), unit_square_mesh(3), "helmholtz")
      >>> pb.A.shape
      (225, 225)
    """
    if equation not in EQUATIONS:
        raise ValueError(f"equation must be one of {EQUATIONS}, got {equation!r}")
    if not shift > -1 or not math.isfinite(shift):
        raise ValueError(f"shift must be a finite number > -1, got {shift=}")
    if param is not None and not math.isfinite(param):
        raise ValueError(f"make_problem: param must be a finite number, got {param=}")
    if not 0 <= min_gap < 1:
        raise ValueError(f"make_problem: min_gap must be in [0, 1), got {min_gap=}")
    if not (isinstance(absorption, int | float) and not isinstance(absorption, bool)):
        raise TypeError(f"make_problem: absorption must be a number, got {absorption=!r}")
    if not (math.isfinite(absorption) and absorption >= 0):
        raise ValueError(f"make_problem: absorption must be a finite number >= 0, got {absorption=}")
    if absorption and equation != "helmholtz":
        raise ValueError(f"make_problem: absorption applies to equation='helmholtz' only, got {equation=!r}")
    p = float(_DEFAULTS[equation] if param is None else param) * (1.0 + shift)
    k1, k2, k3 = jax.random.split(key, 3)
    xq = quadrature_points(mesh).astype(jnp.zeros(()).dtype)
    g = random_field(k1, xq)
    f = 1.0 + random_field(k2, xq)
    if equation == "poisson":
        A, b = assemble_p1(mesh, kappa=jnp.exp(p * g), source=f)
    elif equation == "reaction":
        A, b = assemble_p1(mesh, kappa=jnp.exp(g), reaction=p, source=f)
    elif equation == "advection":
        ang = jax.random.uniform(k3, (), xq.dtype, 0.0, 2 * math.pi)
        beta = p * jnp.stack([jnp.cos(ang), jnp.sin(ang)])
        A, b = assemble_p1(mesh, beta=beta, source=f)
    else:
        gap = resonance_gap(p)
        if gap < min_gap:
            raise ValueError(f"Helmholtz wave number k={p:.4g} is within {gap:.3%} of a Dirichlet "
                             f"eigenvalue (needs >= {min_gap:.0%}); choose another k")
        c = -(p * p) * (1.0 + 0.02 * jnp.tanh(g))
        A, b = assemble_p1(mesh, reaction=c, source=f)
        if absorption:  # + iα times the mass term (same mesh, so the same COO pattern entry for entry)
            Mc, _ = assemble_p1(mesh, kappa=0.0, reaction=c, source=f)
            cdt = np.complex128 if A.vals.dtype == np.float64 else np.complex64
            A = SparseMatrix(A.rows, A.cols, A.vals.astype(cdt) + (1j * absorption) * Mc.vals.astype(cdt), A.shape)
    return FEMProblem(A, b, equation, p, float(absorption))
