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
    from ._citests._ci_tests import CIResult as CIResult
    from ._citests._discrete import bernoulli_test as bernoulli_test
    from ._citests._discrete import chi_square as chi_square
    from ._citests._dseparation import d_separation as d_separation
    from ._citests._gaussian import correlation_matrix as correlation_matrix
    from ._citests._gaussian import fisher_z as fisher_z
    from ._citests._nonparametric import AbstractCalibration as AbstractCalibration
    from ._citests._nonparametric import Asymptotic as Asymptotic
    from ._citests._nonparametric import Permutation as Permutation
    from ._citests._nonparametric import binned_u_statistic as binned_u_statistic
    from ._citests._nonparametric import nonparametric_test as nonparametric_test
    from ._citests._testers import KCI as KCI
    from ._citests._testers import AbstractCITest as AbstractCITest
    from ._citests._testers import Bernoulli as Bernoulli
    from ._citests._testers import ChiSquare as ChiSquare
    from ._citests._testers import DegenerateGaussian as DegenerateGaussian
    from ._citests._testers import DSeparation as DSeparation
    from ._citests._testers import FisherZ as FisherZ
    from ._citests._testers import GSquare as GSquare
    from ._citests._testers import Nonparametric as Nonparametric
    from ._citests._testers import UserCITest as UserCITest
    from ._graphs._data import random_er_dag as random_er_dag
    from ._graphs._data import random_polyforest as random_polyforest
    from ._graphs._data import read_causal_learn_data as read_causal_learn_data
    from ._graphs._data import read_causal_learn_graph as read_causal_learn_graph
    from ._graphs._data import read_endpoint_matrix as read_endpoint_matrix
    from ._graphs._data import sample_bernoulli as sample_bernoulli
    from ._graphs._data import sample_linear_gaussian as sample_linear_gaussian
    from ._graphs._data import sample_nonlinear as sample_nonlinear
    from ._graphs._data import topological_order as topological_order
    from ._graphs._graph_io import graph_to_edges as graph_to_edges
    from ._graphs._graph_io import named_edges as named_edges
    from ._graphs._graph_io import to_dot as to_dot
    from ._graphs._graph_io import to_networkx as to_networkx
    from ._graphs._metrics import Scores as Scores
    from ._graphs._metrics import arrowhead_scores as arrowhead_scores
    from ._graphs._metrics import dag_to_cpdag as dag_to_cpdag
    from ._graphs._metrics import exact_recovery as exact_recovery
    from ._graphs._metrics import shd as shd
    from ._graphs._metrics import skeleton_scores as skeleton_scores
    from ._graphs._plot import plot_graph as plot_graph
    from ._inputs import encode_discrete as encode_discrete
    from ._polyforest._pc_tree import PCTreeResult as PCTreeResult
    from ._polyforest._pc_tree import pc_tree as pc_tree
    from ._polyforest._pc_tree import pc_tree_from_scores as pc_tree_from_scores
    from ._polyforest._pc_tree import polyforest_scores as polyforest_scores
    from ._polyforest._tree_scores import default_cond_bins as default_cond_bins
    from ._search._background import BackgroundKnowledge as BackgroundKnowledge
    from ._search._bootstrap import BootstrapResult as BootstrapResult
    from ._search._bootstrap import bootstrap_pc as bootstrap_pc
    from ._search._colliders import AbstractColliderRule as AbstractColliderRule
    from ._search._colliders import DefiniteMaxPColliders as DefiniteMaxPColliders
    from ._search._colliders import MaxPColliders as MaxPColliders
    from ._search._colliders import SepsetColliders as SepsetColliders
    from ._search._pc import PCResult as PCResult
    from ._search._pc import pc as pc

# Each public name loads its module on first use: a PC script does not import pc_tree, the nonparametric
# tester, the data generators or the plotting module.
_LAZY = {
    "BackgroundKnowledge": "_search._background",
    "BootstrapResult": "_search._bootstrap",
    "bootstrap_pc": "_search._bootstrap",
    "CIResult": "_citests._ci_tests",
    "AbstractColliderRule": "_search._colliders",
    "DefiniteMaxPColliders": "_search._colliders",
    "MaxPColliders": "_search._colliders",
    "SepsetColliders": "_search._colliders",
    "random_er_dag": "_graphs._data",
    "random_polyforest": "_graphs._data",
    "read_causal_learn_data": "_graphs._data",
    "read_causal_learn_graph": "_graphs._data",
    "read_endpoint_matrix": "_graphs._data",
    "sample_bernoulli": "_graphs._data",
    "sample_linear_gaussian": "_graphs._data",
    "sample_nonlinear": "_graphs._data",
    "topological_order": "_graphs._data",
    "bernoulli_test": "_citests._discrete",
    "chi_square": "_citests._discrete",
    "d_separation": "_citests._dseparation",
    "correlation_matrix": "_citests._gaussian",
    "fisher_z": "_citests._gaussian",
    "graph_to_edges": "_graphs._graph_io",
    "named_edges": "_graphs._graph_io",
    "to_dot": "_graphs._graph_io",
    "to_networkx": "_graphs._graph_io",
    "encode_discrete": "_inputs",
    "Scores": "_graphs._metrics",
    "arrowhead_scores": "_graphs._metrics",
    "dag_to_cpdag": "_graphs._metrics",
    "exact_recovery": "_graphs._metrics",
    "shd": "_graphs._metrics",
    "skeleton_scores": "_graphs._metrics",
    "AbstractCalibration": "_citests._nonparametric",
    "Asymptotic": "_citests._nonparametric",
    "Permutation": "_citests._nonparametric",
    "binned_u_statistic": "_citests._nonparametric",
    "nonparametric_test": "_citests._nonparametric",
    "PCResult": "_search._pc",
    "pc": "_search._pc",
    "PCTreeResult": "_polyforest._pc_tree",
    "default_cond_bins": "_polyforest._tree_scores",
    "pc_tree": "_polyforest._pc_tree",
    "pc_tree_from_scores": "_polyforest._pc_tree",
    "polyforest_scores": "_polyforest._pc_tree",
    "plot_graph": "_graphs._plot",
    "AbstractCITest": "_citests._testers",
    "Bernoulli": "_citests._testers",
    "ChiSquare": "_citests._testers",
    "DSeparation": "_citests._testers",
    "DegenerateGaussian": "_citests._testers",
    "KCI": "_citests._testers",
    "FisherZ": "_citests._testers",
    "GSquare": "_citests._testers",
    "Nonparametric": "_citests._testers",
    "UserCITest": "_citests._testers",
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
