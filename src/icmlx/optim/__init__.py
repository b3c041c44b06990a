"""Optimisation: annealed learning-rate schedules and DASH (batched Shampoo).

Schedules (Attia & Koren, arXiv:2503.09411) are pure ``count -> value`` functions usable anywhere optax takes
a learning rate; :func:`tail_degree` and :func:`robustness_exponent` tell how robust a schedule is to an
overestimated step size, and :func:`misspecification_sweep` measures it. DASH (Modoranu et al.,
arXiv:2602.02016) lives here as optax transformations, with its inverse-root solvers as strategy objects
(:class:`NewtonDB`, :class:`CoupledNewton`, :class:`Chebyshev`, :class:`Eigh`) for :func:`matrix_inverse_root`.
:func:`plot_schedule` and :func:`plot_risk_curve` draw a schedule and a sweep (matplotlib, imported on call).
"""

from .._deprecation import deprecated_names
from .._results import RESULTS as RESULTS

# DASH (_dash, _inverse_root, _root_methods) and annealed schedules (_schedules, _warmup_schedules, _tail,
# _robustness, _plots); isort order.
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
from ._tail import robustness_exponent as robustness_exponent
from ._tail import tail_degree as tail_degree
from ._warmup_schedules import join as join
from ._warmup_schedules import warmup as warmup
from ._warmup_schedules import warmup_cosine_decay as warmup_cosine_decay
from ._warmup_schedules import wsd as wsd

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


def _load_inverse_root_solution():
    return InverseRootSolution


# Renamed public names, importable for one release with a DeprecationWarning.
__getattr__ = deprecated_names(__name__, {"InverseRootInfo": ("InverseRootSolution", _load_inverse_root_solution)})
