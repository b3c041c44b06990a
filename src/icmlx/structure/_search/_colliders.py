"""The collider-rule strategy objects of `icmlx.structure.pc` (causal-learn's ``uc_rule`` and ``uc_priority``).

A rule object names how unshielded colliders ``x -> y <- z`` are found and carries the conflict priority that rule
supports, so that no combination of the two can be invalid (causal-learn's definite max-P accepts priorities 2-4
only). Priorities, as in causal-learn: ``0`` overwrite, ``1`` orient bi-directed, ``2`` keep the existing
orientation, ``3`` orient the stronger collider first (by p-value), ``4`` the stronger* one (``3`` with the
comparison of definite max-P).
"""

import abc
from typing import Any, ClassVar

import equinox as eqx

from ..._checks import check_int
from ..._strategy import as_strategy
from . import _orient

__all__ = ["AbstractColliderRule", "SepsetColliders", "MaxPColliders", "DefiniteMaxPColliders"]


def _check_priority(cls_name: str, priority, allowed: tuple[int, ...]) -> int:
    priority = check_int(priority, "priority", where=cls_name)
    if priority not in allowed:
        raise ValueError(f"{cls_name}: priority must be one of {allowed}, got {priority=}")
    return int(priority)


class AbstractColliderRule(eqx.Module):
    """How `icmlx.structure.pc` orients unshielded colliders, with its conflict ``priority`` (static)."""

    priority: eqx.AbstractVar[int]

    @abc.abstractmethod
    def orient(self, graph: Any, sepsets: Any, alpha: float, background: Any, evaluate: Any, conflicts: list,
               meek_r4: bool) -> None:
        """Orient the unshielded colliders of the skeleton ``graph`` in place by this rule, then Meek's rules.

        ``sepsets`` holds the separating sets the skeleton search found, ``evaluate`` gives the p-values of a list of
        ``(x, y, S)`` tests (the rules that compare p-values), ``background`` is the `BackgroundKnowledge` or
        ``None``; each conflicting collider ``(x, y, z)`` is appended to ``conflicts``."""


class SepsetColliders(AbstractColliderRule):
    """``x -> y <- z`` when ``y`` is in no separating set found for ``x, z`` (causal-learn ``uc_rule=0``).

    Attributes:
      priority: conflict priority ``0``-``4`` (default ``2``, keep the existing orientation).

    Raises:
      ValueError: if ``priority`` is not in ``0..4``.

    References:
      Spirtes, Glymour & Scheines, "Causation, Prediction, and Search" (2000); causal-learn ``pc(uc_rule=0)``.

    Examples:
      >>> from icmlx.structure import SepsetColliders
      >>> SepsetColliders(priority=3)
      SepsetColliders(priority=3)
    """

    priority: int = eqx.field(static=True)
    uc_rule: ClassVar[int] = 0

    def __init__(self, priority: int = 2):
        self.priority = _check_priority("SepsetColliders", priority, (0, 1, 2, 3, 4))

    def orient(self, graph, sepsets, alpha, background, evaluate, conflicts, meek_r4):
        _orient.uc_sepset(graph, sepsets, self.priority, background, evaluate, conflicts)
        _orient.meek(graph, background, meek_r4)


class MaxPColliders(AbstractColliderRule):
    """Max-P rule: ``x -> y <- z`` when the largest p-value over the tests of ``x, z`` is attained by a set without
    ``y`` (Ramsey 2016; causal-learn ``uc_rule=1``).

    Attributes:
      priority: conflict priority ``0``-``4`` (default ``2``).

    Raises:
      ValueError: if ``priority`` is not in ``0..4``.

    References:
      Ramsey, "Improving accuracy and scalability of the PC algorithm by maximizing p-value", arXiv:1610.00378.

    Examples:
      >>> from icmlx.structure import MaxPColliders
      >>> MaxPColliders(priority=3) == MaxPColliders(3)
      True
    """

    priority: int = eqx.field(static=True)
    uc_rule: ClassVar[int] = 1

    def __init__(self, priority: int = 2):
        self.priority = _check_priority("MaxPColliders", priority, (0, 1, 2, 3, 4))

    def orient(self, graph, sepsets, alpha, background, evaluate, conflicts, meek_r4):
        _orient.maxp(graph, self.priority, background, evaluate, conflicts)
        _orient.meek(graph, background, meek_r4)


class DefiniteMaxPColliders(AbstractColliderRule):
    """Definite max-P rule: max-P, keeping only the triples whose decision is definite, then the definite Meek
    rules (causal-learn ``uc_rule=2``).

    Attributes:
      priority: conflict priority ``2``, ``3`` or ``4`` (default ``2``); the rule has no overwrite/bi-directed
        variant.

    Raises:
      ValueError: if ``priority`` is not ``2``, ``3`` or ``4``.

    References:
      Ramsey, arXiv:1610.00378; causal-learn ``pc(uc_rule=2)`` (definite max-P and the definite Meek rules).

    Examples:
      >>> from icmlx.structure import DefiniteMaxPColliders
      >>> DefiniteMaxPColliders(priority=4).priority
      4
    """

    priority: int = eqx.field(static=True)
    uc_rule: ClassVar[int] = 2

    def __init__(self, priority: int = 2):
        self.priority = _check_priority("DefiniteMaxPColliders", priority, (2, 3, 4))

    def orient(self, graph, sepsets, alpha, background, evaluate, conflicts, meek_r4):
        definite, definite_non = _orient.definite_maxp(graph, float(alpha), self.priority, background, evaluate,
                                                       conflicts)
        _orient.definite_meek(graph, background, definite, definite_non)
        _orient.meek(graph, background, meek_r4)


_BY_NAME = {"sepset": SepsetColliders, "maxp": MaxPColliders, "definite_maxp": DefiniteMaxPColliders}


def _as_collider_rule(colliders) -> AbstractColliderRule:
    return as_strategy(colliders, AbstractColliderRule, _BY_NAME, "colliders")
