"""Stochastic differential equations: learning overdamped Langevin drift from sparsely sampled trajectories
by geometry-guided path augmentation (Maoutsa, arXiv:2512.23566). Requires the ``sde`` extra (diffrax).
"""

from .._deprecation import deprecated_names
from .._results import RESULTS as RESULTS
from ._basis import FourierBasis as FourierBasis
from ._basis import LinearDrift as LinearDrift
from ._basis import PolynomialBasis as PolynomialBasis
from ._basis import RBFBasis as RBFBasis
from ._basis import RidgeRegression as RidgeRegression
from ._basis import SparseGP as SparseGP
from ._basis import box_grid as box_grid
from ._bridges import BridgeSamples as BridgeSamples
from ._bridges import smc_bridges as smc_bridges
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
from ._simulate import SamplePaths as SamplePaths
from ._simulate import simulate as simulate
from ._simulate import subsample as subsample
from ._systems import ou_drift as ou_drift
from ._systems import ou_stationary_covariance as ou_stationary_covariance
from ._systems import ring_drift as ring_drift
from ._systems import van_der_pol_drift as van_der_pol_drift

__all__ = [
    "AbstractGuidance",
    "BridgeSamples",
    "DriftEstimate",
    "DriftSolution",
    "EMHistory",
    "FourierBasis",
    "GeodesicGuidance",
    "LinearDrift",
    "NoGuidance",
    "PolynomialBasis",
    "RBFBasis",
    "RESULTS",
    "RidgeRegression",
    "SamplePaths",
    "SparseGP",
    "box_grid",
    "conservative_drift",
    "default_function_class",
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
    "simulate",
    "smc_bridges",
    "subsample",
    "van_der_pol_drift",
    "weighted_rmse",
]

__getattr__ = deprecated_names(__name__, {"DriftInference": ("DriftSolution", lambda: DriftSolution)})
