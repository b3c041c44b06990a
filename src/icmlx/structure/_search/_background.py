"""Background knowledge for PC: forbidden and required edges, by column number or by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool

__all__ = ["BackgroundKnowledge", "resolve_background"]


def _index(v: Any, names: tuple[str, ...] | None, d: int, where: str) -> int:
    if isinstance(v, int | np.integer) and not isinstance(v, bool):
        if not 0 <= int(v) < d:
            raise ValueError(f"{where}: node {int(v)} is out of range for d={d} nodes (0..{d - 1})")
        return int(v)
    if names is None:
        raise ValueError(
            f"{where}: node {v!r} is a name, but no names are known; build with "
            "BackgroundKnowledge.from_edges(names, ...) (e.g. names=df.columns)"
        )
    try:
        return names.index(str(v))
    except ValueError:
        raise ValueError(f"{where}: unknown variable {v!r}; the variables are {list(names)}") from None


def _check_consistent(f: np.ndarray, r: np.ndarray, names: tuple[str, ...] | None) -> None:
    """Refuse knowledge that contradicts itself: an edge both forbidden and required, or required both ways."""
    shown = (lambda i: repr(names[i])) if names is not None else str
    both = np.argwhere(f & r)
    if both.size:
        i, j = (int(v) for v in both[0])
        raise ValueError(f"background knowledge contradicts itself: {shown(i)} -> {shown(j)} is both forbidden and "
                         "required (a tier order forbids edges into earlier tiers); drop one of them")
    two = np.argwhere(r & r.T & ~np.eye(r.shape[0], dtype=bool))
    if two.size:
        i, j = (int(v) for v in two[0])
        raise ValueError(f"background knowledge contradicts itself: {shown(i)} -> {shown(j)} and {shown(j)} -> "
                         f"{shown(i)} are both required (a cycle); require one direction")


class BackgroundKnowledge(eqx.Module):
    """Forbidden and required directed edges (causal-learn ``BackgroundKnowledge`` semantics).

    Attributes:
      forbidden: ``(d, d)`` bool, ``forbidden[i, j]`` means ``i -> j`` is forbidden.
      required: ``(d, d)`` bool, ``required[i, j]`` means ``i -> j`` is required.
      names: the variable names the rows refer to, or ``None`` (rows are column numbers). With names,
        `icmlx.structure.pc` matches them to the data's column names, so the data's columns may come in
        any order or include further variables.
    """

    forbidden: Bool[Array, "d d"]
    required: Bool[Array, "d d"]
    names: tuple[str, ...] | None = eqx.field(static=True, default=None)

    @classmethod
    def from_edges(
        cls,
        d: int | Sequence[str],
        forbidden: Sequence[tuple[Any, Any]] = (),
        required: Sequence[tuple[Any, Any]] = (),
        tiers: Sequence[int] | Mapping[Any, int] | None = None,
    ) -> BackgroundKnowledge:
        """Build from lists of ``(i, j)`` edges and optional tiers (no edge from a later tier to an earlier one).

        Args:
          d: the number of variables, or their names (e.g. ``df.columns``); with names, edges and tiers may
            refer to variables by name as well as by column number.
          forbidden: edges ``(i, j)`` meaning ``i -> j`` is forbidden.
          required: edges ``(i, j)`` meaning ``i -> j`` is required.
          tiers: one tier per variable, or a mapping ``{variable: tier}`` (unlisted variables have no tier).

        Raises:
          ValueError: for an unknown name, an index out of range, tiers of the wrong length, or knowledge that
            contradicts itself (an edge both forbidden and required, or required both ways).

        Examples:
          >>> from icmlx.structure import BackgroundKnowledge
          >>> bk = BackgroundKnowledge.from_edges(3, required=[(0, 1)], tiers=[0, 0, 1])
          >>> bool(bk.forbidden[2, 0]), bool(bk.required[0, 1])
          (True, True)
          >>> bk = BackgroundKnowledge.from_edges(["age", "smoke", "cancer"], forbidden=[("cancer", "smoke")])
          >>> bool(bk.forbidden[2, 1]), bk.names
          (True, ('age', 'smoke', 'cancer'))
        """
        if isinstance(d, int | np.integer) and not isinstance(d, bool):
            names, d = None, int(d)
        elif isinstance(d, str):
            raise TypeError(f"d must be the number of variables or a sequence of names, got the string {d!r}")
        else:
            names = tuple(str(v) for v in d)
            d = len(names)
            if len(set(names)) != d:
                raise ValueError(f"variable names must be distinct, got {list(names)}")
        f = np.zeros((d, d), bool)
        r = np.zeros((d, d), bool)
        for where, edges, mat in (("forbidden", forbidden, f), ("required", required, r)):
            for edge in edges:
                if len(edge) != 2:
                    raise ValueError(f"{where}: each edge is a pair (i, j), got {edge!r}")
                mat[_index(edge[0], names, d, where), _index(edge[1], names, d, where)] = True
        if tiers is not None:
            if isinstance(tiers, Mapping):
                t = np.full(d, np.nan)
                for v, tier in tiers.items():
                    t[_index(v, names, d, "tiers")] = tier
                known = ~np.isnan(t)
                f |= known[:, None] & known[None, :] & (t[:, None] > t[None, :])
            else:
                t = np.asarray(tiers)
                if t.shape != (d,):
                    raise ValueError(f"tiers must have length d={d}, got {t.shape=}")
                f |= t[:, None] > t[None, :]
        _check_consistent(f, r, names)
        return cls(jnp.asarray(f), jnp.asarray(r), names)


def resolve_background(
    bk: BackgroundKnowledge, d: int, names: tuple[str, ...] | None
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[str, ...] | None]:
    """``((forbidden, required), names)`` as ``(d, d)`` NumPy matrices in the data's column order.

    Named knowledge is placed by the data's names (any order, a subset allowed); without data names it must
    cover the ``d`` columns in order, and its names then name the result.
    """
    f = np.asarray(bk.forbidden, bool)
    r = np.asarray(bk.required, bool)
    if f.ndim != 2 or f.shape[0] != f.shape[1] or r.shape != f.shape:
        raise ValueError(f"background knowledge needs square forbidden/required matrices of one shape, got "
                         f"{f.shape} and {r.shape}")
    _check_consistent(f, r, bk.names)
    if bk.names is None or names is None:
        if f.shape != (d, d) or r.shape != (d, d):
            raise ValueError(
                f"background knowledge is for {f.shape[0]} variables but the data has d={d}; "
                "build it with BackgroundKnowledge.from_edges(d or names, ...)"
            )
        return (f, r), names if names is not None else bk.names
    unknown = [v for v in bk.names if v not in names]
    if unknown:
        raise ValueError(
            f"background_knowledge names variables {unknown} that are not columns of data; the columns are "
            f"{list(names)}"
        )
    pos = np.asarray([names.index(v) for v in bk.names], int)
    ff = np.zeros((d, d), bool)
    rr = np.zeros((d, d), bool)
    ff[np.ix_(pos, pos)] = f
    rr[np.ix_(pos, pos)] = r
    return (ff, rr), names
