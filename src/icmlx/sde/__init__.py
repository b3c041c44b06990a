"""Stochastic differential equations: learning overdamped Langevin drift from sparsely sampled trajectories
by geometry-guided path augmentation (Maoutsa, arXiv:2512.23566). Requires the ``sde`` extra (diffrax).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:  # for type checkers, IDEs and the API docs; at run time each name loads on first use
    from .._results import RESULTS as RESULTS
    from ._basis import FourierBasis as FourierBasis
    from ._basis import LinearDrift as LinearDrift
    from ._basis import PolynomialBasis as PolynomialBasis
    from ._basis import RBFBasis as RBFBasis
    from ._basis import SelectedBasis as SelectedBasis
    from ._basis import box_grid as box_grid
    from ._bridges import BridgeSamples as BridgeSamples
    from ._bridges import smc_bridges as smc_bridges
    from ._class_scores import FunctionClassSelection as FunctionClassSelection
    from ._class_scores import SelectedClass as SelectedClass
    from ._classes import RidgeRegression as RidgeRegression
    from ._classes import SparseGP as SparseGP
    from ._diffusion import DiffusionEstimate as DiffusionEstimate
    from ._diffusion import DiffusionField as DiffusionField
    from ._diffusion import estimate_diffusion as estimate_diffusion
    from ._em import DriftSolution as DriftSolution
    from ._em import EMHistory as EMHistory
    from ._em import infer_drift as infer_drift
    from ._estimators import DriftEstimate as DriftEstimate
    from ._estimators import conservative_drift as conservative_drift
    from ._estimators import default_function_class as default_function_class
    from ._estimators import naive_drift as naive_drift
    from ._geodesic import geodesic_targets as geodesic_targets
    from ._geodesic import observation_metric as observation_metric
    from ._guidance import AbstractGuidance as AbstractGuidance
    from ._guidance import GeodesicGuidance as GeodesicGuidance
    from ._guidance import NoGuidance as NoGuidance
    from ._metrics import kde_weights as kde_weights
    from ._metrics import rmse as rmse
    from ._metrics import weighted_rmse as weighted_rmse
    from ._plot import plot_drift as plot_drift
    from ._plot import plot_paths as plot_paths
    from ._selection import select_function_class as select_function_class
    from ._simulate import SamplePaths as SamplePaths
    from ._simulate import simulate as simulate
    from ._simulate import subsample as subsample
    from ._systems import ou_drift as ou_drift
    from ._systems import ou_stationary_covariance as ou_stationary_covariance
    from ._systems import ring_drift as ring_drift
    from ._systems import van_der_pol_drift as van_der_pol_drift

# Each public name loads its module on first use: only the simulator (simulate, SamplePaths, subsample) needs
# diffrax, so drift inference from data does not import it.
_LAZY = {
    "RESULTS": ".._results",
    "FourierBasis": "_basis",
    "LinearDrift": "_basis",
    "PolynomialBasis": "_basis",
    "RBFBasis": "_basis",
    "RidgeRegression": "_classes",
    "SparseGP": "_classes",
    "box_grid": "_basis",
    "BridgeSamples": "_bridges",
    "smc_bridges": "_bridges",
    "DiffusionEstimate": "_diffusion",
    "DiffusionField": "_diffusion",
    "estimate_diffusion": "_diffusion",
    "DriftSolution": "_em",
    "EMHistory": "_em",
    "infer_drift": "_em",
    "DriftEstimate": "_estimators",
    "conservative_drift": "_estimators",
    "default_function_class": "_estimators",
    "naive_drift": "_estimators",
    "geodesic_targets": "_geodesic",
    "FunctionClassSelection": "_class_scores",
    "SelectedClass": "_class_scores",
    "SelectedBasis": "_basis",
    "select_function_class": "_selection",
    "observation_metric": "_geodesic",
    "AbstractGuidance": "_guidance",
    "GeodesicGuidance": "_guidance",
    "NoGuidance": "_guidance",
    "kde_weights": "_metrics",
    "rmse": "_metrics",
    "weighted_rmse": "_metrics",
    "plot_drift": "_plot",
    "plot_paths": "_plot",
    "SamplePaths": "_simulate",
    "simulate": "_simulate",
    "subsample": "_simulate",
    "ou_drift": "_systems",
    "ou_stationary_covariance": "_systems",
    "ring_drift": "_systems",
    "van_der_pol_drift": "_systems",
}

__all__ = [
    "AbstractGuidance",
    "BridgeSamples",
    "DiffusionEstimate",
    "DiffusionField",
    "DriftEstimate",
    "DriftSolution",
    "EMHistory",
    "FourierBasis",
    "FunctionClassSelection",
    "GeodesicGuidance",
    "LinearDrift",
    "NoGuidance",
    "PolynomialBasis",
    "RBFBasis",
    "RESULTS",
    "RidgeRegression",
    "SamplePaths",
    "SelectedBasis",
    "SelectedClass",
    "SparseGP",
    "box_grid",
    "conservative_drift",
    "default_function_class",
    "estimate_diffusion",
    "geodesic_targets",
    "infer_drift",
    "kde_weights",
    "naive_drift",
    "observation_metric",
    "ou_drift",
    "ou_stationary_covariance",
    "plot_drift",
    "plot_paths",
    "ring_drift",
    "rmse",
    "select_function_class",
    "simulate",
    "smc_bridges",
    "subsample",
    "van_der_pol_drift",
    "weighted_rmse",
]

__getattr__ = _lazy_attributes(__name__, globals(), _LAZY)

def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

