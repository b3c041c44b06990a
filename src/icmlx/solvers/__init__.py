"""Sparse linear solvers in JAX: Krylov methods, smoothed-aggregation multigrid, the learned G-RANS solver and P1
finite-element problems, every solve differentiable and composable with lineax.

- ``solve(A, b)``: the front door, one call like ``pyamg.solve`` (smoothed aggregation with near-nullspace
  candidates, CG or GMRES by matrix class); ``amg_setup(A, ...)`` → ``AMGSolver`` for many right-hand sides,
  ``AMGSolver.update(values)`` for new values on the same pattern (jittable); ``air_setup(A)`` → ``AMGSolver``
  with nonsymmetric multigrid (approximate ideal restriction) for convection-dominated problems.
- ``cg``, ``gmres``, ``bicgstab``: Krylov methods on any matrix type, lineax operator or callable, with
  ``preconditioner="jacobi"``, a ``MultilevelHierarchy`` or a callable.
- Differentiation: ``jax.grad``/``jax.jvp`` through every solve, in ``b`` and in the matrix values
  (``SparseMatrix.vals``, the values given to ``AMGSolver.update``), by implicit differentiation: the adjoint
  system $A^\top \\lambda = \bar x$ is solved with the same method and set-up, and
  $\\partial L / \\partial A_{rc} = -\\lambda_r x_c$.
- lineax: ``SparseMatrix`` is a lineax operator, ``AMGSolver`` a lineax solver
  (``lx.linear_solve(op, b, amg_setup(A))``) and ``AMGSolver.as_preconditioner()`` a lineax preconditioner for
  ``lx.CG``/``lx.GMRES``.
- ``GRANS``: the neural residual-aware subspace-correction solver (a ``lineax.AbstractLinearSolver``), configured
  by strategy objects (smoother, outer step); ``train_grans`` trains it without reference solutions;
  ``GRANS.pretrained()`` loads the shipped weights.
- ``icmlx.solvers.fem``: P1 finite elements on triangle meshes assembled in JAX.
- Every solver returns a ``LinearSolution`` (an ``icmlx.Solution``) whose ``result`` is an ``icmlx.RESULTS``;
  ``plot_residuals(solution)`` draws its residual history.

The code has a private folder per family: ``_krylov/``, ``_amg/``, ``_grans/``, ``_fem/``, beside the shared sparse
formats and conversion (``_sparse``, ``_convert``) and the front door (``_solve``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:  # for type checkers, IDEs and the API docs; at run time each name loads on first use
    from ..solvers import fem as fem
    from ._amg._aggregation import aggregation_hierarchy as aggregation_hierarchy
    from ._amg._aggregation import standard_aggregation as standard_aggregation
    from ._amg._air import FCJacobiRelaxation as FCJacobiRelaxation
    from ._amg._air import air_setup as air_setup
    from ._amg._build import rigid_body_modes as rigid_body_modes
    from ._amg._hierarchy import AbstractCycle as AbstractCycle
    from ._amg._hierarchy import EllMatrix as EllMatrix
    from ._amg._hierarchy import MultilevelHierarchy as MultilevelHierarchy
    from ._amg._hierarchy import VCycle as VCycle
    from ._amg._hierarchy import WCycle as WCycle
    from ._amg._hierarchy import m_matrix_envelope as m_matrix_envelope
    from ._amg._relaxation import AbstractRelaxation as AbstractRelaxation
    from ._amg._relaxation import ChebyshevRelaxation as ChebyshevRelaxation
    from ._amg._relaxation import GaussSeidelRelaxation as GaussSeidelRelaxation
    from ._amg._relaxation import JacobiRelaxation as JacobiRelaxation
    from ._amg._relaxation import estimate_lambda_max as estimate_lambda_max
    from ._amg._smoothed import smoothed_aggregation as smoothed_aggregation
    from ._amg._strength import AbstractStrength as AbstractStrength
    from ._amg._strength import EvolutionStrength as EvolutionStrength
    from ._amg._strength import SymmetricStrength as SymmetricStrength
    from ._amg_solver import AMGSolver as AMGSolver
    from ._dtype import working_dtype as working_dtype
    from ._grans._helmholtz import helmholtz_family as helmholtz_family
    from ._grans._helmholtz import train_grans_helmholtz as train_grans_helmholtz
    from ._grans._network import GRANSNet as GRANSNet
    from ._grans._operator import GRANSOperator as GRANSOperator
    from ._grans._outer import AbstractOuterStep as AbstractOuterStep
    from ._grans._outer import FlexibleGCR as FlexibleGCR
    from ._grans._outer import NoOuterStep as NoOuterStep
    from ._grans._outer import ThreeTermStep as ThreeTermStep
    from ._grans._smoothers import AbstractSmoother as AbstractSmoother
    from ._grans._smoothers import ChebyshevSmoother as ChebyshevSmoother
    from ._grans._smoothers import MultilevelSmoother as MultilevelSmoother
    from ._grans._solver import GRANS as GRANS
    from ._grans._train import TrainResult as TrainResult
    from ._grans._train import grans_loss as grans_loss
    from ._grans._train import train_grans as train_grans
    from ._grans._weights import load_weights as load_weights
    from ._grans._weights import save_weights as save_weights
    from ._krylov._methods import bicgstab as bicgstab
    from ._krylov._methods import cg as cg
    from ._krylov._methods import gmres as gmres
    from ._plot import plot_residuals as plot_residuals
    from ._solution import LinearSolution as LinearSolution
    from ._solve import amg_setup as amg_setup
    from ._solve import solve as solve
    from ._sparse import SparseMatrix as SparseMatrix
    from ._sparse import bucket_size as bucket_size

# Each public name loads its module on first use: a solve does not import the FEM assembly, the G-RANS network
# and its training (optax), or the plotting module.
_LAZY = {
    "aggregation_hierarchy": "_amg._aggregation",
    "FCJacobiRelaxation": "_amg._air",
    "air_setup": "_amg._air",
    "standard_aggregation": "_amg._aggregation",
    "AbstractStrength": "_amg._strength",
    "EvolutionStrength": "_amg._strength",
    "SymmetricStrength": "_amg._strength",
    "rigid_body_modes": "_amg._build",
    "AbstractRelaxation": "_amg._relaxation",
    "ChebyshevRelaxation": "_amg._relaxation",
    "GaussSeidelRelaxation": "_amg._relaxation",
    "JacobiRelaxation": "_amg._relaxation",
    "working_dtype": "_dtype",
    "GRANS": "_grans._solver",
    "GRANSNet": "_grans._network",
    "GRANSOperator": "_grans._operator",
    "bicgstab": "_krylov._methods",
    "cg": "_krylov._methods",
    "gmres": "_krylov._methods",
    "EllMatrix": "_amg._hierarchy",
    "MultilevelHierarchy": "_amg._hierarchy",
    "m_matrix_envelope": "_amg._hierarchy",
    "smoothed_aggregation": "_amg._smoothed",
    "AbstractCycle": "_amg._hierarchy",
    "VCycle": "_amg._hierarchy",
    "WCycle": "_amg._hierarchy",
    "AbstractOuterStep": "_grans._outer",
    "FlexibleGCR": "_grans._outer",
    "NoOuterStep": "_grans._outer",
    "ThreeTermStep": "_grans._outer",
    "plot_residuals": "_plot",
    "estimate_lambda_max": "_amg._relaxation",
    "AbstractSmoother": "_grans._smoothers",
    "ChebyshevSmoother": "_grans._smoothers",
    "MultilevelSmoother": "_grans._smoothers",
    "LinearSolution": "_solution",
    "AMGSolver": "_amg_solver",
    "amg_setup": "_solve",
    "solve": "_solve",
    "SparseMatrix": "_sparse",
    "bucket_size": "_sparse",
    "TrainResult": "_grans._train",
    "grans_loss": "_grans._train",
    "train_grans": "_grans._train",
    "helmholtz_family": "_grans._helmholtz",
    "train_grans_helmholtz": "_grans._helmholtz",
    "load_weights": "_grans._weights",
    "save_weights": "_grans._weights",
}

__all__ = [
    "fem",
    "LinearSolution",
    "SparseMatrix",
    "bucket_size",
    "cg",
    "gmres",
    "bicgstab",
    "estimate_lambda_max",
    "standard_aggregation",
    "aggregation_hierarchy",
    "EllMatrix",
    "MultilevelHierarchy",
    "smoothed_aggregation",
    "m_matrix_envelope",
    "solve",
    "amg_setup",
    "AMGSolver",
    "air_setup",
    "AbstractStrength",
    "SymmetricStrength",
    "EvolutionStrength",
    "AbstractRelaxation",
    "JacobiRelaxation",
    "ChebyshevRelaxation",
    "GaussSeidelRelaxation",
    "FCJacobiRelaxation",
    "AbstractCycle",
    "VCycle",
    "WCycle",
    "rigid_body_modes",
    "GRANS",
    "GRANSNet",
    "GRANSOperator",
    "AbstractSmoother",
    "ChebyshevSmoother",
    "MultilevelSmoother",
    "AbstractOuterStep",
    "ThreeTermStep",
    "FlexibleGCR",
    "NoOuterStep",
    "working_dtype",
    "TrainResult",
    "train_grans",
    "train_grans_helmholtz",
    "helmholtz_family",
    "grans_loss",
    "save_weights",
    "load_weights",
    "plot_residuals",
]

__getattr__ = _lazy_attributes(__name__, globals(), _LAZY, submodules=("fem",))

def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

