"""The CI-test strategy objects that :func:`icmlx.structure.pc` and :func:`icmlx.structure.pc_tree` take.

Each object names one tester and carries exactly the settings that tester uses (only :class:`Nonparametric` has
any), so no combination of options can be invalid. They are :class:`equinox.Module`\\ s with static fields only:
hashable, comparable, not callable. The strings ``"fisherz"``, ``"chisq"``, ``"gsq"``, ``"bernoulli"``,
``"nonparametric"`` and ``"d_separation"`` are shorthands for the default objects.
"""

from typing import ClassVar

import equinox as eqx
import numpy as np

__all__ = ["AbstractCITest", "FisherZ", "ChiSquare", "GSquare", "Bernoulli", "Nonparametric", "DSeparation"]


class AbstractCITest(eqx.Module):
    """A conditional-independence tester for :func:`icmlx.structure.pc` / :func:`icmlx.structure.pc_tree`.

    ``name`` is the tester's string shorthand (a class constant, not a field).
    """

    name: ClassVar[str]


class FisherZ(AbstractCITest):
    r"""Fisher-z partial-correlation tests (Gaussian data): :func:`icmlx.structure.fisher_z`.

    Examples:
      >>> from icmlx.structure import FisherZ
      >>> hash(FisherZ()) == hash(FisherZ())
      True
    """

    name: ClassVar[str] = "fisherz"


class ChiSquare(AbstractCITest):
    """Pearson X² tests on integer-coded discrete data (:func:`icmlx.structure.chi_square`); ``pc`` only."""

    name: ClassVar[str] = "chisq"


class GSquare(AbstractCITest):
    """G² (likelihood-ratio) tests on integer-coded discrete data (``chi_square(g_square=True)``); ``pc`` only."""

    name: ClassVar[str] = "gsq"


class Bernoulli(AbstractCITest):
    """Bernoulli tester for 0/1 data (:func:`icmlx.structure.bernoulli_test`).

    Examples:
      >>> import jax
      >>> from icmlx.structure import Bernoulli, pc_tree, random_polyforest, sample_bernoulli
      >>> dag = random_polyforest(jax.random.key(0), 4)
      >>> pc_tree(sample_bernoulli(jax.random.key(1), dag, 500), ci_test=Bernoulli()).graph.shape
      (4, 4)
    """

    name: ClassVar[str] = "bernoulli"


class DSeparation(AbstractCITest):
    """The d-separation oracle (:func:`icmlx.structure.d_separation`): ``pc`` takes ``true_dag=``, ``pc_tree`` the
    DAG as its ``data``."""

    name: ClassVar[str] = "d_separation"


def _check_bins(value, arg: str, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"Nonparametric: {arg} must be an integer >= 2, got {arg}={value!r}")
    if value < 2:
        raise ValueError(f"Nonparametric: {arg} must be >= 2, got {arg}={value!r}")
    return int(value)


class Nonparametric(AbstractCITest):
    r"""Binned U-statistic tester (:func:`icmlx.structure.nonparametric_test`); ``pc_tree`` only.

    The tested pair is cut into ``num_bins`` equal-frequency bins and the separator into ``cond_bins``; with
    ``cond_bins=None`` ``pc_tree`` uses :func:`icmlx.structure.default_cond_bins`,
    :math:`\max(\text{num\_bins}, \operatorname{round}(\sqrt n / 5))`, so the separator's bins shrink as ``n`` grows.

    Attributes:
      num_bins: bins of the tested pair (``>= 2``).
      cond_bins: bins of the separator (``>= 2``), or ``None`` for the ``n``-dependent default.

    Raises:
      TypeError: if ``num_bins`` or ``cond_bins`` is not an integer.
      ValueError: if ``num_bins`` or ``cond_bins`` is below 2.

    Examples:
      >>> from icmlx.structure import Nonparametric
      >>> Nonparametric(num_bins=3)
      Nonparametric(num_bins=3, cond_bins=None)
    """

    name: ClassVar[str] = "nonparametric"
    num_bins: int = eqx.field(static=True)
    cond_bins: int | None = eqx.field(static=True)

    def __init__(self, num_bins: int = 4, cond_bins: int | None = None):
        self.num_bins = _check_bins(num_bins, "num_bins")
        self.cond_bins = _check_bins(cond_bins, "cond_bins", allow_none=True)


_BY_NAME = {c.name: c for c in (FisherZ, ChiSquare, GSquare, Bernoulli, Nonparametric, DSeparation)}


def _as_ci_test(ci_test, supported: tuple[str, ...], where: str) -> AbstractCITest:
    """The strategy object of ``ci_test`` (an object or its string shorthand), checked against ``supported``."""
    if isinstance(ci_test, str) and ci_test in _BY_NAME:
        ci_test = _BY_NAME[ci_test]()
    if not isinstance(ci_test, AbstractCITest) or ci_test.name not in supported:
        objs = ", ".join(f"{type(_BY_NAME[s]()).__name__}()" for s in supported)
        raise ValueError(f"{where} ci_test must be one of {supported} or {objs}, got {ci_test=!r}")
    return ci_test
