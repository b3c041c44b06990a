"""Structure learning: the PC algorithm and the optimal poly-forest learner (Gao, Wang & Aragam,
arXiv:2507.05689), with batched Gaussian, discrete, Bernoulli and nonparametric conditional-independence tests.

The tester of `pc` / `pc_tree` is a strategy object (`FisherZ`, `ChiSquare`,
`GSquare`, `Bernoulli`, `Nonparametric`, `DSeparation`), its string shorthand, or a
function ``fn(data, x, y, S) -> p_value`` of the user's (`UserCITest`); `bootstrap_pc` gives edge
frequencies over resamples. The
calibration of `nonparametric_test` is `Asymptotic` or `Permutation`; PC's collider rule is
`SepsetColliders`, `MaxPColliders` or `DefiniteMaxPColliders`.

Data may be a NumPy/JAX array or a pandas DataFrame (its column names name the result; text and categorical
columns are coded for the discrete tests). Every graph result has ``edges``, ``to_networkx()``, ``to_dot()`` and
a short ``repr``; `plot_graph` draws one (matplotlib, imported only when called).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:  # for type checkers, IDEs and the API docs; at run time each name loads on first use
    from ._background import BackgroundKnowledge as BackgroundKnowledge
    from ._bootstrap import BootstrapResult as BootstrapResult
    from ._bootstrap import bootstrap_pc as bootstrap_pc
    from ._ci_tests import CIResult as CIResult
    from ._colliders import AbstractColliderRule as AbstractColliderRule
    from ._colliders import DefiniteMaxPColliders as DefiniteMaxPColliders
    from ._colliders import MaxPColliders as MaxPColliders
    from ._colliders import SepsetColliders as SepsetColliders
    from ._data import random_er_dag as random_er_dag
    from ._data import random_polyforest as random_polyforest
    from ._data import read_causal_learn_data as read_causal_learn_data
    from ._data import read_causal_learn_graph as read_causal_learn_graph
    from ._data import read_endpoint_matrix as read_endpoint_matrix
    from ._data import sample_bernoulli as sample_bernoulli
    from ._data import sample_linear_gaussian as sample_linear_gaussian
    from ._data import sample_nonlinear as sample_nonlinear
    from ._data import topological_order as topological_order
    from ._discrete import bernoulli_test as bernoulli_test
    from ._discrete import chi_square as chi_square
    from ._dseparation import d_separation as d_separation
    from ._gaussian import correlation_matrix as correlation_matrix
    from ._gaussian import fisher_z as fisher_z
    from ._graph_io import graph_to_edges as graph_to_edges
    from ._graph_io import named_edges as named_edges
    from ._graph_io import to_dot as to_dot
    from ._graph_io import to_networkx as to_networkx
    from ._inputs import encode_discrete as encode_discrete
    from ._metrics import Scores as Scores
    from ._metrics import arrowhead_scores as arrowhead_scores
    from ._metrics import dag_to_cpdag as dag_to_cpdag
    from ._metrics import exact_recovery as exact_recovery
    from ._metrics import shd as shd
    from ._metrics import skeleton_scores as skeleton_scores
    from ._nonparametric import AbstractCalibration as AbstractCalibration
    from ._nonparametric import Asymptotic as Asymptotic
    from ._nonparametric import Permutation as Permutation
    from ._nonparametric import binned_u_statistic as binned_u_statistic
    from ._nonparametric import nonparametric_test as nonparametric_test
    from ._pc import PCResult as PCResult
    from ._pc import pc as pc
    from ._pc_tree import PCTreeResult as PCTreeResult
    from ._pc_tree import pc_tree as pc_tree
    from ._pc_tree import pc_tree_from_scores as pc_tree_from_scores
    from ._pc_tree import polyforest_scores as polyforest_scores
    from ._plot import plot_graph as plot_graph
    from ._testers import KCI as KCI
    from ._testers import AbstractCITest as AbstractCITest
    from ._testers import Bernoulli as Bernoulli
    from ._testers import ChiSquare as ChiSquare
    from ._testers import DegenerateGaussian as DegenerateGaussian
    from ._testers import DSeparation as DSeparation
    from ._testers import FisherZ as FisherZ
    from ._testers import GSquare as GSquare
    from ._testers import Nonparametric as Nonparametric
    from ._testers import UserCITest as UserCITest
    from ._tree_scores import default_cond_bins as default_cond_bins

# Each public name loads its module on first use: a PC script does not import pc_tree, the nonparametric
# tester, the data generators or the plotting module.
_LAZY = {
    "BackgroundKnowledge": "_background",
    "BootstrapResult": "_bootstrap",
    "bootstrap_pc": "_bootstrap",
    "CIResult": "_ci_tests",
    "AbstractColliderRule": "_colliders",
    "DefiniteMaxPColliders": "_colliders",
    "MaxPColliders": "_colliders",
    "SepsetColliders": "_colliders",
    "random_er_dag": "_data",
    "random_polyforest": "_data",
    "read_causal_learn_data": "_data",
    "read_causal_learn_graph": "_data",
    "read_endpoint_matrix": "_data",
    "sample_bernoulli": "_data",
    "sample_linear_gaussian": "_data",
    "sample_nonlinear": "_data",
    "topological_order": "_data",
    "bernoulli_test": "_discrete",
    "chi_square": "_discrete",
    "d_separation": "_dseparation",
    "correlation_matrix": "_gaussian",
    "fisher_z": "_gaussian",
    "graph_to_edges": "_graph_io",
    "named_edges": "_graph_io",
    "to_dot": "_graph_io",
    "to_networkx": "_graph_io",
    "encode_discrete": "_inputs",
    "Scores": "_metrics",
    "arrowhead_scores": "_metrics",
    "dag_to_cpdag": "_metrics",
    "exact_recovery": "_metrics",
    "shd": "_metrics",
    "skeleton_scores": "_metrics",
    "AbstractCalibration": "_nonparametric",
    "Asymptotic": "_nonparametric",
    "Permutation": "_nonparametric",
    "binned_u_statistic": "_nonparametric",
    "nonparametric_test": "_nonparametric",
    "PCResult": "_pc",
    "pc": "_pc",
    "PCTreeResult": "_pc_tree",
    "default_cond_bins": "_tree_scores",
    "pc_tree": "_pc_tree",
    "pc_tree_from_scores": "_pc_tree",
    "polyforest_scores": "_pc_tree",
    "plot_graph": "_plot",
    "AbstractCITest": "_testers",
    "Bernoulli": "_testers",
    "ChiSquare": "_testers",
    "DSeparation": "_testers",
    "DegenerateGaussian": "_testers",
    "KCI": "_testers",
    "FisherZ": "_testers",
    "GSquare": "_testers",
    "Nonparametric": "_testers",
    "UserCITest": "_testers",
}

__all__ = [
    "CIResult",
    "bernoulli_test",
    "binned_u_statistic",
    "chi_square",
    "correlation_matrix",
    "d_separation",
    "fisher_z",
    "random_er_dag",
    "random_polyforest",
    "read_causal_learn_data",
    "read_causal_learn_graph",
    "read_endpoint_matrix",
    "sample_bernoulli",
    "sample_linear_gaussian",
    "sample_nonlinear",
    "topological_order",
    "Scores",
    "arrowhead_scores",
    "dag_to_cpdag",
    "exact_recovery",
    "shd",
    "skeleton_scores",
    "nonparametric_test",
    "AbstractCalibration",
    "Asymptotic",
    "Permutation",
    "BackgroundKnowledge",
    "PCResult",
    "encode_discrete",
    "graph_to_edges",
    "named_edges",
    "to_networkx",
    "to_dot",
    "plot_graph",
    "pc",
    "bootstrap_pc",
    "BootstrapResult",
    "PCTreeResult",
    "default_cond_bins",
    "pc_tree",
    "pc_tree_from_scores",
    "polyforest_scores",
    "AbstractCITest",
    "FisherZ",
    "ChiSquare",
    "GSquare",
    "Bernoulli",
    "Nonparametric",
    "DSeparation",
    "UserCITest",
    "DegenerateGaussian",
    "KCI",
    "AbstractColliderRule",
    "SepsetColliders",
    "MaxPColliders",
    "DefiniteMaxPColliders",
]

__getattr__ = _lazy_attributes(__name__, globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
