"""Optimisation: annealed learning-rate schedules and DASH (batched Shampoo).

Schedules (Attia & Koren, arXiv:2503.09411) are pure ``count -> value`` functions usable anywhere optax takes
a learning rate; `tail_degree` and `robustness_exponent` tell how robust a schedule is to an
overestimated step size, and `misspecification_sweep` measures it. DASH (Modoranu et al.,
arXiv:2602.02016) lives here as optax transformations, with its inverse-root solvers as strategy objects
(`NewtonDB`, `CoupledNewton`, `Chebyshev`, `Eigh`) for `matrix_inverse_root`.
`plot_schedule` and `plot_risk_curve` draw a schedule and a sweep (matplotlib, imported on call).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes as _lazy_attributes

# DASH (_dash, _inverse_root, _root_methods) and annealed schedules (_schedules, _warmup_schedules, _tail,
# _robustness, _plots); isort order.
if TYPE_CHECKING:  # for type checkers, IDEs and the API docs; at run time each name loads on first use
    from .._results import RESULTS as RESULTS
    from ._dash import DASH_STATIC_ARGS as DASH_STATIC_ARGS
    from ._dash import DashState as DashState
    from ._dash import dash as dash
    from ._dash import scale_by_dash as scale_by_dash
    from ._inverse_root import InverseRootSolution as InverseRootSolution
    from ._inverse_root import matrix_inverse_root as matrix_inverse_root
    from ._inverse_root import power_iteration as power_iteration
    from ._plots import plot_risk_curve as plot_risk_curve
    from ._plots import plot_schedule as plot_schedule
    from ._robustness import SlopeFitResult as SlopeFitResult
    from ._robustness import SweepResult as SweepResult
    from ._robustness import fit_slopes as fit_slopes
    from ._robustness import misspecification_sweep as misspecification_sweep
    from ._robustness import schedule_table as schedule_table
    from ._root_methods import AbstractInverseRoot as AbstractInverseRoot
    from ._root_methods import AbstractScaling as AbstractScaling
    from ._root_methods import Chebyshev as Chebyshev
    from ._root_methods import CoupledNewton as CoupledNewton
    from ._root_methods import Eigh as Eigh
    from ._root_methods import FrobeniusScaling as FrobeniusScaling
    from ._root_methods import NewtonDB as NewtonDB
    from ._root_methods import PowerScaling as PowerScaling
    from ._schedules import Schedule as Schedule
    from ._schedules import constant as constant
    from ._schedules import cosine_decay as cosine_decay
    from ._schedules import inverse_sqrt as inverse_sqrt
    from ._schedules import linear_decay as linear_decay
    from ._schedules import polynomial_decay as polynomial_decay
    from ._soap import SOAP_STATIC_ARGS as SOAP_STATIC_ARGS
    from ._soap import SoapState as SoapState
    from ._soap import scale_by_soap as scale_by_soap
    from ._soap import soap as soap
    from ._tail import robustness_exponent as robustness_exponent
    from ._tail import tail_degree as tail_degree
    from ._warmup_schedules import join as join
    from ._warmup_schedules import warmup as warmup
    from ._warmup_schedules import warmup_cosine_decay as warmup_cosine_decay
    from ._warmup_schedules import wsd as wsd

# Each public name loads its module on first use: a DASH script does not import the schedules' sweep and
# plotting modules, and a schedule-only script does not import optax or lineax (RESULTS).
_LAZY = {
    "RESULTS": ".._results",
    "DASH_STATIC_ARGS": "_dash",
    "DashState": "_dash",
    "dash": "_dash",
    "scale_by_dash": "_dash",
    "InverseRootSolution": "_inverse_root",
    "matrix_inverse_root": "_inverse_root",
    "power_iteration": "_inverse_root",
    "plot_risk_curve": "_plots",
    "plot_schedule": "_plots",
    "SlopeFitResult": "_robustness",
    "SweepResult": "_robustness",
    "fit_slopes": "_robustness",
    "misspecification_sweep": "_robustness",
    "schedule_table": "_robustness",
    "AbstractInverseRoot": "_root_methods",
    "AbstractScaling": "_root_methods",
    "Chebyshev": "_root_methods",
    "CoupledNewton": "_root_methods",
    "Eigh": "_root_methods",
    "FrobeniusScaling": "_root_methods",
    "NewtonDB": "_root_methods",
    "PowerScaling": "_root_methods",
    "Schedule": "_schedules",
    "SOAP_STATIC_ARGS": "_soap",
    "SoapState": "_soap",
    "scale_by_soap": "_soap",
    "soap": "_soap",
    "constant": "_schedules",
    "cosine_decay": "_schedules",
    "inverse_sqrt": "_schedules",
    "linear_decay": "_schedules",
    "polynomial_decay": "_schedules",
    "robustness_exponent": "_tail",
    "tail_degree": "_tail",
    "join": "_warmup_schedules",
    "warmup": "_warmup_schedules",
    "warmup_cosine_decay": "_warmup_schedules",
    "wsd": "_warmup_schedules",
}

__all__ = [
    # schedules
    "Schedule",
    "constant",
    "cosine_decay",
    "inverse_sqrt",
    "join",
    "linear_decay",
    "polynomial_decay",
    "robustness_exponent",
    "tail_degree",
    "warmup",
    "warmup_cosine_decay",
    "wsd",
    "misspecification_sweep",
    "fit_slopes",
    "schedule_table",
    "SweepResult",
    "SlopeFitResult",
    "plot_risk_curve",
    "plot_schedule",
    # DASH
    "DASH_STATIC_ARGS",
    "DashState",
    "dash",
    "scale_by_dash",
    # SOAP
    "SOAP_STATIC_ARGS",
    "SoapState",
    "soap",
    "scale_by_soap",
    "matrix_inverse_root",
    "power_iteration",
    "InverseRootSolution",
    "AbstractInverseRoot",
    "NewtonDB",
    "CoupledNewton",
    "Chebyshev",
    "Eigh",
    "AbstractScaling",
    "PowerScaling",
    "FrobeniusScaling",
    "RESULTS",
]

__getattr__ = _lazy_attributes(__name__, globals(), _LAZY)

def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

