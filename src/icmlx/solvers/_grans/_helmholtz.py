"""Training G-RANS on the indefinite Helmholtz family: random wavenumbers and media, through `train_grans`."""

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..._checks import check_int, check_number
from ..._types import PRNGKey
from ._network import GRANSNet
from ._outer import ThreeTermStep
from ._smoothers import MultilevelSmoother
from ._train import TrainResult, train_grans

__all__ = ["helmholtz_family", "train_grans_helmholtz"]

_MAX_DRAWS = 1000


def _check_range(value: Any, name: str, where: str, minimum: float = 0.0) -> tuple[float, float]:
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise TypeError(f"{where}: {name} must be a pair (low, high) of numbers, got {name}={value!r}")
    lo = check_number(value[0], f"{name}[0]", where=where, minimum=minimum)
    hi = check_number(value[1], f"{name}[1]", where=where, minimum=minimum)
    if not lo <= hi:
        raise ValueError(f"{where}: {name} must have low <= high, got {name}={value!r}")
    return float(lo), float(hi)


def helmholtz_family(key: PRNGKey, num_problems: int, *, wavenumber_range: tuple[float, float] = (5.0, 30.0),
                     refine: int = 5, exclude: Sequence[float] = (), exclude_width: float = 1.0,
                     min_gap: float = 0.005, absorption_range: tuple[float, float] = (0.0, 0.0)) -> list:
    r"""``num_problems`` random indefinite Helmholtz problems
    $-\Delta u - k^2(1 + 0.02\tanh g)(1 + i\alpha)\,u = f$ (P1 FEM).

    Each problem draws its wavenumber $k \sim U(k_{lo}, k_{hi})$, its absorption $\alpha \sim U(\alpha_{lo},
    \alpha_{hi})$ and its medium $g$ and source $f$ (smooth random fields) from its own key:
    ``make_problem(key_i, unit_square_mesh(refine), "helmholtz", param=k, absorption=α)``. A draw
    within ``exclude_width`` of a wavenumber in ``exclude`` (held-out values), or with ``resonance_gap(k) < min_gap``
    (a nearly singular matrix when undamped), is redrawn. With ``absorption_range=(0, 0)`` (the default) every matrix
    is real symmetric indefinite; with ``α > 0`` it is complex symmetric (``A`` complex, ``b`` real), which
    ``GRANS`` solves on its complex path.

    Args:
      key: JAX PRNG key.
      num_problems: number of problems (a positive int).
      wavenumber_range: ``(low, high)`` wavenumbers, ``0 <= low <= high``.
      refine: ``unit_square_mesh`` refinement (``refine=5``: ``n = 3,969`` unknowns).
      exclude: wavenumbers no draw may come within ``exclude_width`` of.
      exclude_width: half-width of the excluded windows.
      min_gap: the resonance filter of ``make_problem`` (its relative distance to the continuous Dirichlet
        spectrum; the default 0.005 admits wavenumbers up to about 30).
      absorption_range: ``(low, high)`` absorptions, ``0 <= low <= high``.

    Returns:
      A list of ``FEMProblem`` (``A``, ``b``, ``param`` = the wavenumber, ``absorption`` = α).

    Raises:
      TypeError: ``wavenumber_range`` or ``absorption_range`` is not a pair of numbers.
      ValueError: ``num_problems`` or ``refine`` not a positive int, a range with ``low > high``, or no admissible
        wavenumber found in 1,000 draws.

    Examples:
      >>> import jax
      >>> from icmlx.solvers import helmholtz_family
      >>> pbs = helmholtz_family(jax.random.key(0), 2, wavenumber_range=(5.0, 10.0), refine=2)
      >>> [pb.A.shape for pb in pbs], all(5.0 <= pb.param <= 10.0 for pb in pbs)
      ([(49, 49), (49, 49)], True)
      >>> damped = helmholtz_family(jax.random.key(0), 1, refine=2, absorption_range=(0.05, 0.1))[0]
      >>> bool(0.05 <= damped.absorption <= 0.1), damped.A.vals.dtype.kind
      (True, 'c')
    """
    from ..fem import make_problem, resonance_gap, unit_square_mesh

    where = "helmholtz_family"
    num_problems = check_int(num_problems, "num_problems", where=where, minimum=1)
    refine = check_int(refine, "refine", where=where, minimum=1)
    lo, hi = _check_range(wavenumber_range, "wavenumber_range", where)
    alo, ahi = _check_range(absorption_range, "absorption_range", where)
    width = check_number(exclude_width, "exclude_width", where=where, minimum=0)
    held = [check_number(k, "exclude[]", where=where) for k in exclude]
    mesh = unit_square_mesh(refine)
    kk, kp = jax.random.split(key)
    rng = np.random.default_rng(int(jax.random.randint(kk, (), 0, 2**31 - 1)))
    out = []
    for key_i in jax.random.split(kp, num_problems):  # host loop: eager set-up of a training set, not traced
        for _ in range(_MAX_DRAWS):
            k = float(rng.uniform(lo, hi))
            if all(abs(k - h) > width for h in held) and resonance_gap(k) >= min_gap:
                break
        else:
            raise ValueError(f"{where}: no wavenumber in wavenumber_range={wavenumber_range!r} away from "
                             f"exclude={list(exclude)!r} with resonance_gap >= {min_gap} in {_MAX_DRAWS} draws")
        alpha = float(rng.uniform(alo, ahi)) if ahi > alo else alo
        out.append(make_problem(key_i, mesh, "helmholtz", param=k, min_gap=min_gap, absorption=alpha))
    return out


def train_grans_helmholtz(key: PRNGKey, problems: Sequence[Any] | None = None, *, num_problems: int = 6,
                          wavenumber_range: tuple[float, float] = (5.0, 30.0), refine: int = 5,
                          exclude: Sequence[float] = (), absorption_range: tuple[float, float] = (0.0, 0.0),
                          hidden: int = 16, layers: int = 3, **train_kwargs: Any) -> TrainResult:
    r"""Train the G-RANS network for indefinite Helmholtz systems (`train_grans` on `helmholtz_family`).

    The network is trained for the solver as ``GRANS`` runs it with a network: the V-cycle smoother
    (``MultilevelSmoother()``), the basis built once from the initial residual, and the residual-norm 3-term step
    (``ThreeTermStep(norm="auto")``, residual norm on these symmetric indefinite matrices), by the
    self-supervised loss of `grans_loss` (mean log reduction of the residual per iteration; no reference
    solutions) with the progressive bootstrap of `train_grans`. Damped problems (complex ``A``) train the same
    network through the complex path of ``GRANS`` (the network on the phase-aligned real and imaginary parts of the
    residual, a complex basis, Hermitian least squares), so one network serves both. The weights shipped as
    ``GRANS.pretrained(weights="helmholtz")`` were written by this function through
    ``python scripts/train_grans.py --helmholtz`` (the command and the drawn wavenumbers are in their header).

    Args:
      key: JAX PRNG key (problems from ``fold_in(key, 0)``, training from ``fold_in(key, 1)``).
      problems: training problems (``FEMProblem``\ s or ``(A, b)`` pairs); ``None`` (default): ``num_problems``
        problems of ``helmholtz_family(fold_in(key, 0), num_problems, wavenumber_range=wavenumber_range,
        refine=refine, exclude=exclude)``.
      num_problems: problems drawn when ``problems`` is None.
      wavenumber_range: wavenumber range when ``problems`` is None.
      refine: mesh refinement when ``problems`` is None.
      exclude: held-out wavenumbers no training draw comes within 1 of.
      absorption_range: absorption range when ``problems`` is None (default ``(0, 0)``: real problems).
      hidden: network architecture (``GRANSNet.init``, zero output head: training starts from the zero head).
      layers: network architecture (``GRANSNet.init``, zero output head: training starts from the zero head).
      **train_kwargs: passed to `train_grans` (``stages``, ``steps_per_stage``, ``batch``, ``learning_rate``,
        ``unroll``, ``progress``, ...).

    Returns:
      The `TrainResult` (``net``, ``losses``, ``eval_before`` / ``eval_after`` on the training states).

    Raises:
      TypeError, ValueError: as `helmholtz_family` and `train_grans`.

    Examples:
      >>> import jax
      >>> from icmlx.solvers import train_grans_helmholtz
      >>> res = train_grans_helmholtz(jax.random.key(0), num_problems=1, refine=2, hidden=4, layers=1, stages=(0,),
      ...                             steps_per_stage=2, batch=2, states_per_operator=2)
      >>> res.losses.shape, res.net.channels
      ((2,), 2)
    """
    from ._solver import GRANS

    kp, kt = jax.random.fold_in(key, 0), jax.random.fold_in(key, 1)
    if problems is None:
        problems = helmholtz_family(kp, num_problems, wavenumber_range=wavenumber_range, refine=refine,
                                    exclude=exclude, absorption_range=absorption_range)
    pairs = [(p.A, p.b) if hasattr(p, "A") else tuple(p) for p in problems]
    smoother = MultilevelSmoother()
    net = GRANSNet.init(kt, hidden=hidden, layers=layers)
    solver = GRANS(net, smoother=smoother)
    ops = [solver.setup(A) for A, _ in pairs]
    rhs = [jnp.asarray(b) for _, b in pairs]
    train_kwargs.setdefault("outer", ThreeTermStep(norm="auto"))
    return train_grans(jax.random.fold_in(kt, 1), ops, rhs, net=net, smoother=smoother, **train_kwargs)
