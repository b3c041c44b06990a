"""Linear solvers: G-RANS, a self-supervised neural residual-aware subspace-correction solver for sparse FEM
systems, with P1 finite-element assembly and classical Krylov/AMG baselines in JAX.

- ``icmlx.solvers.fem``: P1 finite elements on triangle meshes (Poisson, reaction-, advection-diffusion,
  Helmholtz) assembled in JAX with segment sums.
- ``SparseMatrix``: COO matrix usable as a lineax operator (tag it, e.g. ``lx.positive_semidefinite_tag``, for
  lineax's own solvers); ``cg``, ``gmres``, ``bicgstab``, smoothers and greedy aggregation as baselines and
  building blocks. Every entry point takes SciPy sparse matrices in any format, BCOO, dense arrays or a
  ``SparseMatrix``; ``cg(A, b, preconditioner=smoothed_aggregation(A))`` preconditions with a V-cycle.
- ``solve(A, b)``: one call like ``pyamg.solve`` (smoothed aggregation with near-nullspace candidates, CG or
  GMRES by matrix class); ``amg_setup(A, ...)`` → ``AMGSolver.solve(b)`` for many right-hand sides.
- ``plot_residuals(solution)``: the residual history of any solve (matplotlib, imported on call).
- ``GRANS``: the neural solver (a ``lineax.AbstractLinearSolver``), configured by strategy objects
  (``smoother=ChebyshevSmoother(...)`` / ``MultilevelSmoother(...)``, ``outer=ThreeTermStep(...)`` /
  ``FlexibleGCR(...)`` / ``NoOuterStep()``); ``train_grans`` trains it without reference solutions;
  ``GRANS.pretrained()`` loads the shipped weights.
- Every solver returns a ``LinearSolution`` (an ``icmlx.Solution``) whose ``result`` is an ``icmlx.RESULTS``.
"""

from typing import TYPE_CHECKING

from .._deprecation import deprecated_names as _deprecated_names
from .._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:  # for type checkers, IDEs and the API docs; at run time each name loads on first use
    from . import fem as fem
    from ._aggregation import aggregation_hierarchy as aggregation_hierarchy
    from ._aggregation import standard_aggregation as standard_aggregation
    from ._amg import rigid_body_modes as rigid_body_modes
    from ._amg_relax import AbstractRelaxation as AbstractRelaxation
    from ._amg_relax import ChebyshevRelaxation as ChebyshevRelaxation
    from ._amg_relax import GaussSeidelRelaxation as GaussSeidelRelaxation
    from ._amg_relax import JacobiRelaxation as JacobiRelaxation
    from ._dtype import working_dtype as working_dtype
    from ._grans import GRANS as GRANS
    from ._grans_net import GRANSNet as GRANSNet
    from ._grans_operator import GRANSOperator as GRANSOperator
    from ._krylov import bicgstab as bicgstab
    from ._krylov import cg as cg
    from ._krylov import gmres as gmres
    from ._multilevel import EllMatrix as EllMatrix
    from ._multilevel import MultilevelHierarchy as MultilevelHierarchy
    from ._multilevel import m_matrix_envelope as m_matrix_envelope
    from ._multilevel import mis2_aggregation as mis2_aggregation
    from ._multilevel import smoothed_aggregation as smoothed_aggregation
    from ._outer import AbstractOuterStep as AbstractOuterStep
    from ._outer import FlexibleGCR as FlexibleGCR
    from ._outer import NoOuterStep as NoOuterStep
    from ._outer import ThreeTermStep as ThreeTermStep
    from ._plot import plot_residuals as plot_residuals
    from ._relaxation import chebyshev_smoother as chebyshev_smoother
    from ._relaxation import estimate_lambda_max as estimate_lambda_max
    from ._relaxation import jacobi_smoother as jacobi_smoother
    from ._smoothers import AbstractSmoother as AbstractSmoother
    from ._smoothers import ChebyshevSmoother as ChebyshevSmoother
    from ._smoothers import MultilevelSmoother as MultilevelSmoother
    from ._solution import LinearSolution as LinearSolution
    from ._solve import AMGSolver as AMGSolver
    from ._solve import amg_setup as amg_setup
    from ._solve import solve as solve
    from ._sparse import SparseMatrix as SparseMatrix
    from ._sparse import bucket_size as bucket_size
    from ._strength import AbstractStrength as AbstractStrength
    from ._strength import EvolutionStrength as EvolutionStrength
    from ._strength import SymmetricStrength as SymmetricStrength
    from ._train import TrainResult as TrainResult
    from ._train import grans_loss as grans_loss
    from ._train import train_grans as train_grans
    from ._weights import load_weights as load_weights
    from ._weights import save_weights as save_weights

# Each public name loads its module on first use: a solve does not import the FEM assembly, the G-RANS network
# and its training (optax), or the plotting module.
_LAZY = {
    "aggregation_hierarchy": "_aggregation",
    "standard_aggregation": "_aggregation",
    "AbstractStrength": "_strength",
    "EvolutionStrength": "_strength",
    "SymmetricStrength": "_strength",
    "rigid_body_modes": "_amg",
    "AbstractRelaxation": "_amg_relax",
    "ChebyshevRelaxation": "_amg_relax",
    "GaussSeidelRelaxation": "_amg_relax",
    "JacobiRelaxation": "_amg_relax",
    "working_dtype": "_dtype",
    "GRANS": "_grans",
    "GRANSNet": "_grans_net",
    "GRANSOperator": "_grans_operator",
    "bicgstab": "_krylov",
    "cg": "_krylov",
    "gmres": "_krylov",
    "EllMatrix": "_multilevel",
    "MultilevelHierarchy": "_multilevel",
    "m_matrix_envelope": "_multilevel",
    "mis2_aggregation": "_multilevel",
    "smoothed_aggregation": "_multilevel",
    "AbstractOuterStep": "_outer",
    "FlexibleGCR": "_outer",
    "NoOuterStep": "_outer",
    "ThreeTermStep": "_outer",
    "plot_residuals": "_plot",
    "chebyshev_smoother": "_relaxation",
    "estimate_lambda_max": "_relaxation",
    "jacobi_smoother": "_relaxation",
    "AbstractSmoother": "_smoothers",
    "ChebyshevSmoother": "_smoothers",
    "MultilevelSmoother": "_smoothers",
    "LinearSolution": "_solution",
    "AMGSolver": "_solve",
    "amg_setup": "_solve",
    "solve": "_solve",
    "SparseMatrix": "_sparse",
    "bucket_size": "_sparse",
    "TrainResult": "_train",
    "grans_loss": "_train",
    "train_grans": "_train",
    "load_weights": "_weights",
    "save_weights": "_weights",
}

__all__ = [
    "fem",
    "LinearSolution",
    "SparseMatrix",
    "bucket_size",
    "cg",
    "gmres",
    "bicgstab",
    "jacobi_smoother",
    "chebyshev_smoother",
    "estimate_lambda_max",
    "standard_aggregation",
    "aggregation_hierarchy",
    "EllMatrix",
    "MultilevelHierarchy",
    "smoothed_aggregation",
    "mis2_aggregation",
    "m_matrix_envelope",
    "solve",
    "amg_setup",
    "AMGSolver",
    "AbstractStrength",
    "SymmetricStrength",
    "EvolutionStrength",
    "AbstractRelaxation",
    "JacobiRelaxation",
    "ChebyshevRelaxation",
    "GaussSeidelRelaxation",
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
    "grans_loss",
    "save_weights",
    "load_weights",
    "plot_residuals",
]

_renamed = _deprecated_names(
    __name__,
    {
        "GRANSSolution": ("LinearSolution", lambda: __getattr__("LinearSolution")),
        "KrylovSolution": ("LinearSolution", lambda: __getattr__("LinearSolution")),
    },
)

__getattr__ = _lazy_attributes(__name__, globals(), _LAZY, fallback=_renamed, submodules=("fem",))

def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

