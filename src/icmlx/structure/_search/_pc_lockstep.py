"""PC-stable on several samples of the same variables at once (`icmlx.structure.bootstrap_pc`'s resamples).

The samples are laid side by side as columns (sample ``b``'s variable ``j`` is column ``b d + j``) of one
prepared tester (`AbstractCITest._prepare_resamples`), and their skeleton searches advance level by level
together: each sample keeps its own adjacency, separating sets and largest p-values, and the new tests of a
level, all samples' at once, go to the tester as one batch (one set of compiled calls, not one per sample).
Every test reads only its own sample's columns, so each sample's graph is the one ``pc`` gives on it alone.
"""

import warnings

import jax
import numpy as np

from icmlx._progress import ProgressBar, resolve_progress

from ..._checks import check_int, check_number
from ._background import resolve_background
from ._colliders import _as_collider_rule
from ._pc import (
    LEVEL_CHUNK_TESTS,
    _check_level_memory,
    _gc_paused,
    _level_apply,
    _level_chunks,
    _level_tests,
    _orient_result,
    _Sepsets,
    _Tester,
    pc,
)

__all__: list[str] = []

#: ``pc`` keyword arguments the lockstep path takes (besides ``ci_test``, ``nan_policy`` and ``names``).
_LOCKSTEP_KWARGS = frozenset({"alpha", "max_depth", "stable", "colliders", "background_knowledge", "meek_r4", "mesh",
                              "max_batch", "progress"})

#: Samples run together are capped at this many columns side by side (the Fisher-z tester holds a square matrix of
#: that side) and at this many data cells (the discrete testers hold the codes of all of them).
GROUP_COLUMNS = 2048
GROUP_CELLS = 2**26

_QUIET = "(constant|duplicated) columns"  # a resample can draw a rare category zero times


def _pc_quiet(data, **kwargs) -> np.ndarray:
    """``pc(data, **kwargs).graph`` as a NumPy array, without the constant/duplicated-column warnings."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_QUIET)
        return np.asarray(pc(data, **kwargs).graph)


def _lockstep_graphs(test, arr: np.ndarray, rows: np.ndarray, nan_policy: str, names, *, alpha=0.05,
                     max_depth=None, stable=True, colliders="sepset", background_knowledge=None, meek_r4=None,
                     mesh=None, max_batch=8192, progress=None) -> list[np.ndarray]:
    """The CPDAGs (``(d, d)`` int, ``pc``'s encoding) of PC-stable on ``arr[rows[b]]`` for every ``b``, the
    samples run in lockstep in groups of at most `GROUP_COLUMNS` columns and `GROUP_CELLS` cells."""
    if isinstance(alpha, (jax.Array, np.ndarray)):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha=}")
    check_number(alpha, "alpha", where="bootstrap_pc", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
    check_int(max_batch, "max_batch", where="bootstrap_pc", minimum=1)
    if max_depth is not None:
        check_int(max_depth, "max_depth", where="bootstrap_pc", minimum=0)
    rule = _as_collider_rule(colliders)
    if nan_policy == "testwise" and not test.handles_missing:
        raise ValueError(f"nan_policy='testwise' needs a CI test that drops missing rows test by test, got {test!r}; "
                         "use nan_policy='listwise'")
    n, d = arr.shape
    bk = forbid = None
    if background_knowledge is not None:
        bk, names = resolve_background(background_knowledge, d, names)
        forbid = bk[0] & bk[0].T
    size = max(1, min(len(rows), GROUP_COLUMNS // d, GROUP_CELLS // max(n * d, 1)))
    graphs: list[np.ndarray] = []
    with ProgressBar("bootstrap_pc", enabled=resolve_progress(progress), unit="resample") as bar:
        for start in range(0, len(rows), size):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_QUIET)
                samples = [np.asarray(test.check_input(arr[idx], nan_policy=nan_policy, names=names)[0])
                           for idx in rows[start:start + size]]
            batched = test._prepare_resamples(samples, mesh=mesh, max_batch=max_batch)
            with _gc_paused():
                graphs += _lockstep_group(batched, len(samples), d, float(alpha), max_depth, forbid, bk, rule,
                                          meek_r4, names)
            bar.update(len(samples))
    return graphs


def _lockstep_group(batched, g: int, d: int, alpha: float, max_depth, forbid, bk, rule, meek_r4, names):
    """PC-stable on the ``g`` samples of one prepared tester; a level's tests of all samples are batched
    together (flushed every `LEVEL_CHUNK_TESTS` rows, so host memory stays bounded)."""
    tester = _Tester(batched, g * d)
    adjs = [~np.eye(d, dtype=bool) for _ in range(g)]
    seps = [_Sepsets(d) for _ in range(g)]
    maxps = [np.full((d, d), -np.inf) for _ in range(g)]
    depth = -1
    while True:
        depth += 1
        # pc runs level `depth` while some variable has at least depth + 1 adjacencies
        live = [b for b in range(g) if adjs[b].sum(axis=1).max(initial=0) - 1 >= depth]
        if not live or (max_depth is not None and depth > max_depth):
            break
        removal = {}
        todo = []
        for b in live:
            _check_level_memory(adjs[b], depth)
            removal[b] = np.zeros((d, d), bool) if forbid is None else (forbid & adjs[b])
            todo += [(b, lo, hi) for lo, hi in _level_chunks(adjs[b].sum(axis=1), depth)]
        parts: list = []
        for i, (b, lo, hi) in enumerate(todo):
            chunk = _level_tests(adjs[b], depth, lo, hi)
            if chunk is not None:
                parts.append((b, chunk))
            if parts and (i == len(todo) - 1 or sum(len(c[3]) for _, c in parts) >= LEVEL_CHUNK_TESTS):
                p = tester.pvalues_rows(np.concatenate([c[3] + b * d for b, c in parts]))
                off = 0
                for bb, c in parts:
                    m = len(c[3])
                    _level_apply(c, p[off:off + m], depth, alpha, removal[bb], seps[bb], maxps[bb])
                    off += m
                parts = []
        for b in live:
            adjs[b] &= ~(removal[b] | removal[b].T)
    out = []
    for b in range(g):
        def pfn(triples, off=b * d):
            return tester.pvalues([(x + off, y + off, tuple(v + off for v in S)) for x, y, S in triples])

        res = _orient_result(adjs[b], seps[b], maxps[b], set(), pfn, bk, rule, alpha, meek_r4, names)
        out.append(np.asarray(res.graph))
    return out
