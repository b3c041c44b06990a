"""Discrete Bayesian networks from BIF files: a small parser, a forward sampler and exact marginals (NumPy).

Benchmark-side helper (not part of the library). The networks are the public benchmark networks of the bnlearn
repository (https://www.bnlearn.com/bnrepository/), e.g. ALARM (Beinlich et al. 1989, 37 variables, 46 arcs) and
INSURANCE (Binder et al. 1997, 27 variables, 52 arcs), in the BIF text format that repository distributes
(``alarm.bif``, ``insurance.bif``). The files are not part of this repository: put them in a folder and pass it
to the benchmark (``--networks DIR`` or ``$ICMLX_BN_NETWORKS``).

Only the BIF subset these networks use is read: ``variable NAME { type discrete [ k ] { s1, ..., sk }; }`` and
``probability ( CHILD | P1, ..., Pm ) { (v1, ..., vm) p1, ..., pk; ... }`` or ``{ table p1, ..., pk; }``.
Sampled data are written like the causal-learn bnlearn benchmark files: a header ``X1 ... Xd`` and one row of
1-based integer states per sample, whitespace separated, columns in the file's variable order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Network:
    """A discrete Bayesian network: names, states, parents and CPTs.

    ``cpt[v]`` has shape ``(card[p1], ..., card[pm], card[v])`` (parents in ``parents[v]`` order) and sums to 1
    over its last axis.
    """

    names: tuple[str, ...]
    states: tuple[tuple[str, ...], ...]
    parents: tuple[tuple[int, ...], ...]
    cpt: tuple[np.ndarray, ...]

    @property
    def card(self) -> tuple[int, ...]:
        return tuple(len(s) for s in self.states)

    @property
    def arcs(self) -> list[tuple[int, int]]:
        return [(p, v) for v, ps in enumerate(self.parents) for p in ps]

    def adjacency(self) -> np.ndarray:
        """``a[i, j] = 1`` for an arc i -> j."""
        a = np.zeros((len(self.names), len(self.names)), np.int8)
        for p, v in self.arcs:
            a[p, v] = 1
        return a

    def order(self) -> list[int]:
        """A topological order (parents first); raises on a cycle."""
        done: list[int] = []
        seen: set[int] = set()
        pending = list(range(len(self.names)))
        while pending:
            rest = [v for v in pending if not set(self.parents[v]) <= seen]
            if len(rest) == len(pending):
                raise ValueError(f"the network has a cycle among {[self.names[v] for v in rest]}")
            for v in pending:
                if set(self.parents[v]) <= seen:
                    done.append(v)
            seen = set(done)
            pending = rest
        return done


_VARIABLE = re.compile(r"variable\s+([^\s{]+)\s*\{\s*type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^}]*)\}", re.S)
_PROBABILITY = re.compile(r"probability\s*\(\s*([^)|]+?)\s*(?:\|\s*([^)]*))?\)\s*\{([^}]*)\}", re.S)


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def read_bif(path: str | Path) -> Network:
    """Parse a BIF file (the subset described in the module docstring) into a :class:`Network`."""
    text = Path(path).read_text()
    text = re.sub(r"//[^\n]*", "", text)
    names, states = [], []
    for name, k, body in _VARIABLE.findall(text):
        s = tuple(_split(body))
        if len(s) != int(k):
            raise ValueError(f"{path}: variable {name} declares {k} states but lists {len(s)}: {s}")
        names.append(name)
        states.append(s)
    index = {n: i for i, n in enumerate(names)}
    parents: list[tuple[int, ...] | None] = [None] * len(names)
    cpts: list[np.ndarray | None] = [None] * len(names)
    for child, given, body in _PROBABILITY.findall(text):
        v = index[child.strip()]
        ps = tuple(index[p] for p in _split(given or ""))
        shape = tuple(len(states[p]) for p in ps) + (len(states[v]),)
        table = np.full(shape, np.nan)
        for entry in body.split(";"):
            entry = entry.strip()
            if not entry:
                continue
            if entry.startswith("table"):
                table[...] = np.array(_split(entry[len("table"):]), float).reshape(shape)
                continue
            m = re.match(r"\(([^)]*)\)(.*)", entry, re.S)
            if m is None:
                raise ValueError(f"{path}: cannot read the CPT row {entry!r} of {child}")
            key = tuple(states[p].index(s) for p, s in zip(ps, _split(m.group(1)), strict=True))
            table[key] = np.array(_split(m.group(2)), float)
        if np.isnan(table).any():
            raise ValueError(f"{path}: the CPT of {child} misses rows")
        sums = table.sum(-1)
        if not np.allclose(sums, 1.0, atol=1e-4):
            raise ValueError(f"{path}: a row of the CPT of {child} sums to {sums.min()}..{sums.max()}, not 1")
        parents[v] = ps
        cpts[v] = table / sums[..., None]
    missing = [names[v] for v in range(len(names)) if cpts[v] is None]
    if missing:
        raise ValueError(f"{path}: no probability block for {missing}")
    return Network(tuple(names), tuple(states), tuple(parents), tuple(cpts))  # type: ignore[arg-type]


def sample(net: Network, n: int, seed: int = 0) -> np.ndarray:
    """Forward (ancestral) sample of ``n`` rows, 0-based int64 states, columns in ``net.names`` order."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, len(net.names)), np.int64)
    for v in net.order():
        probs = np.broadcast_to(net.cpt[v][tuple(x[:, p] for p in net.parents[v])], (n, net.card[v]))
        u = rng.random(n)[:, None]
        x[:, v] = np.minimum((u > np.cumsum(probs, axis=1)).sum(1), net.card[v] - 1)
    return x


def exact_marginal(net: Network, v: int) -> np.ndarray:
    """P(X_v), exactly: variable elimination over v's ancestors (their CPTs are the whole joint of the ancestral
    set), each step summing out the variable whose merged factor is smallest. Independent of sampling."""
    keep, stack = set(), [v]
    while stack:
        u = stack.pop()
        if u not in keep:
            keep.add(u)
            stack.extend(net.parents[u])
    factors = [(net.cpt[u], (*net.parents[u], u)) for u in keep]
    card = net.card
    def merged_size(u, factors):
        return math.prod(card[w] for w in set().union(*(f[1] for f in factors if u in f[1])))

    for _ in range(len(keep) - 1):
        u = min((w for w in keep if w != v), key=lambda w: merged_size(w, factors))
        keep.discard(u)
        mine = [f for f in factors if u in f[1]]
        factors = [f for f in factors if u not in f[1]]
        scope = tuple(sorted(set().union(*(f[1] for f in mine)) - {u}))
        operands: list = []
        for arr, sc in mine:
            operands += [arr, list(sc)]
        factors.append((np.einsum(*operands, list(scope)), scope))
    out = np.ones(card[v])
    for arr, sc in factors:  # every factor left has scope (v,) or ()
        out = out * (arr if sc else np.full(card[v], float(arr)))
    return out / out.sum()


def write_txt(x: np.ndarray, path: str | Path) -> None:
    """Write 0-based states as the causal-learn benchmark text (header X1..Xd, 1-based states)."""
    header = " ".join(f"X{j + 1}" for j in range(x.shape[1]))
    np.savetxt(path, x + 1, fmt="%d", header=header, comments="")


def network_data(bif: str | Path, n: int = 10_000, seed: int = 0) -> tuple[Network, np.ndarray]:
    """Parse ``bif`` and draw ``n`` rows (0-based states) with the fixed ``seed``."""
    net = read_bif(bif)
    return net, sample(net, n, seed)
