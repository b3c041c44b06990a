"""Orientation phase of PC (unshielded colliders + Meek rules), replaying causal-learn's exact semantics.

This is host-side NumPy on a ``d x d`` endpoint matrix: the orientation phase is a sequential, order-dependent
procedure over O(d^2) triples, and users coming from causal-learn expect the same CPDAG. The replica keeps
causal-learn's triple order, its conflict priorities, and its incremental "directed path" matrix (``dpath``) used
by the Meek ancestor check. The CI tests that the max-p rules need are requested from the caller in batches.
"""

from collections.abc import Callable
from itertools import chain, combinations

import numpy as np

TAIL, ARROW = -1, 1


class _DPath:
    """causal-learn ``GeneralGraph``'s ``dpath`` on a copy of the endpoint matrix, advanced by replaying the edge
    changes of a `_Graph` in order (the same incremental steps causal-learn takes at each change)."""

    def __init__(self, adjacency):
        d = adjacency.shape[0]
        self.d = d
        self.g = np.where(adjacency, TAIL, 0).astype(np.int64)
        np.fill_diagonal(self.g, 0)
        self.dpath = np.eye(d, dtype=np.int64)
        self.done = 0

    def replay(self, log) -> None:
        """Apply the changes ``log[done:]``. A rebuild (the removal of a directed edge) discards all earlier path
        state, so only the last rebuild of the segment is run, on the graph as it was then, followed by the
        incremental steps after it: the same matrix as running every step."""
        ops = log[self.done:]
        if not ops:
            return
        g = self.g
        before, last = [], -1
        for t, (op, i, j) in enumerate(ops):
            before.append((g[i, j], g[j, i]))
            if op == "remove":
                if self.is_parent_of(i, j) or self.is_parent_of(j, i):
                    last = t
                g[i, j] = g[j, i] = 0
            elif op == "directed":
                g[j, i], g[i, j] = ARROW, TAIL
            else:
                g[j, i] = g[i, j] = ARROW
        if last >= 0:
            for t in range(len(ops) - 1, last, -1):  # back to the graph right after the last rebuild's removal
                _, i, j = ops[t]
                g[i, j], g[j, i] = before[t]
            self.reconstitute_dpath()
            for op, i, j in ops[last + 1:]:  # redo the later changes, with their incremental steps
                if op == "remove":
                    g[i, j] = g[j, i] = 0
                elif op == "directed":
                    g[j, i], g[i, j] = ARROW, TAIL
                    self.adjust_dpath(i, j)
                else:
                    g[j, i] = g[i, j] = ARROW
        else:
            for op, i, j in ops:
                if op == "directed":
                    self.adjust_dpath(i, j)
        self.done = len(log)

    def adjust_dpath(self, i, j):
        dp = self.dpath
        dp[j, i] = 1
        row_i = dp[i, :] == 1
        col_j = dp[:, j] == 1
        dp[j, row_i] = 1
        dp[col_j, i] = 1

    def is_parent_of(self, i, j):
        return self.g[j, i] == ARROW and self.g[i, j] == TAIL

    def reconstitute_dpath(self):
        self.dpath = np.eye(self.d, dtype=np.int64)
        iu, ju = np.nonzero(np.triu(self.g.T != 0, 1))  # get_graph_edges order: i < j, row-major
        for i, j in zip(iu[::-1].tolist(), ju[::-1].tolist()):  # edges.pop() walks from the end
            if self.is_parent_of(i, j):
                self.adjust_dpath(i, j)
            elif self.is_parent_of(j, i):
                self.adjust_dpath(j, i)


class _Graph:
    """Endpoint matrix ``g`` (``g[j,i]=1, g[i,j]=-1`` ⇔ ``i -> j``) with causal-learn's ``dpath``."""

    def __init__(self, adjacency):
        d = adjacency.shape[0]
        self.d = d
        self.g = np.where(adjacency, TAIL, 0).astype(np.int64)
        np.fill_diagonal(self.g, 0)
        # causal-learn's dpath is maintained incrementally at every edge change (and rebuilt from all edges when a
        # directed one is removed), O(d) to O(e d) per change; only background knowledge and the definite Meek
        # rules read it. The changes are logged instead and replayed, with the same steps, at the first read.
        self._adjacency = np.asarray(adjacency, bool).copy()
        self._log: list[tuple[str, int, int]] = []
        self._shadow: _DPath | None = None

    @property
    def dpath(self):
        """causal-learn's incremental directed-path matrix, replayed up to the current graph."""
        if self._shadow is None:
            self._shadow = _DPath(self._adjacency)
        self._shadow.replay(self._log)
        return self._shadow.dpath

    def is_parent_of(self, i, j):
        return self.g[j, i] == ARROW and self.g[i, j] == TAIL

    def remove(self, i, j):
        if self.g[i, j] == 0:
            return
        self.g[i, j] = 0
        self.g[j, i] = 0
        self._log.append(("remove", i, j))

    def add_directed(self, i, j):
        """``add_edge(Edge(i, j, TAIL, ARROW))`` on a pair without an edge."""
        if self.g[i, j] != 0 or self.g[j, i] != 0:
            return
        self.g[j, i] = ARROW
        self.g[i, j] = TAIL
        self._log.append(("directed", i, j))

    def add_bidirected(self, i, j):
        self.g[j, i] = ARROW
        self.g[i, j] = ARROW
        self._log.append(("bidirected", i, j))

    def orient(self, i, j):
        """remove the i-j edge and add ``i -> j`` (the idiom used throughout causal-learn)."""
        self.remove(i, j)
        self.add_directed(i, j)

    def is_undirected(self, i, j):
        return self.g[i, j] == TAIL and self.g[j, i] == TAIL

    def is_fully_directed(self, i, j):
        return self.g[i, j] == TAIL and self.g[j, i] == ARROW

    def is_ancestor_of(self, k, j):
        return self.dpath[j, k] == 1

    def neighbors(self, i):
        return np.nonzero(self.g[i, :] != 0)[0]

    # --- causal-learn CausalGraph enumerations, same order --------------------------------------------------
    def find_adj(self):
        r, c = np.nonzero(self.g == TAIL)
        tails = list(zip(c.tolist(), r.tolist()))
        r, c = np.nonzero(self.g == ARROW)
        heads = list(zip(c.tolist(), r.tolist()))
        return tails + heads

    def _by_first(self, adj):
        groups: dict[int, list[tuple[int, int]]] = {}
        for p in adj:
            groups.setdefault(p[0], []).append(p)
        return groups

    def find_unshielded_triples(self):
        adj = self.find_adj()
        groups = self._by_first(adj)
        out = []
        for a, b in adj:
            for _, c in groups.get(b, ()):
                if a != c and self.g[a, c] == 0:
                    out.append((a, b, c))
        return out

    def find_triangles(self):
        adj = self.find_adj()
        adjset = set(adj)
        groups = self._by_first(adj)
        out = []
        for a, b in adj:
            for _, c in groups.get(b, ()):
                if a != c and (a, c) in adjset:
                    out.append((a, b, c))
        return out

    def find_kites(self):
        tri = self.find_triangles()
        groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        for t in tri:
            groups.setdefault((t[0], t[2]), []).append(t)
        out = []
        for t0 in tri:
            for t1 in groups[(t0[0], t0[2])]:
                if t1 is not t0 and t0[1] < t1[1] and self.g[t0[1], t1[1]] == 0:
                    out.append((t0[0], t0[1], t1[1], t0[2]))
        return out

    def find_cond_sets(self, i, j):
        def powerset(nb):
            s = [int(v) for v in nb]
            return list(chain.from_iterable(combinations(s, r) for r in range(len(s) + 1)))

        return list(dict.fromkeys(powerset(self.neighbors(i)) + powerset(self.neighbors(j))))


PValueFn = Callable[[list[tuple[int, int, tuple[int, ...]]]], list[float]]


def _bk_blocks(bk, x, y, z):
    if bk is None:
        return False
    forb, req = bk
    return bool(forb[x, y] or forb[z, y] or req[y, x] or req[y, z])


def orient_by_background(g, bk):
    forb, req = bk
    iu, ju = np.nonzero(np.triu(g.g.T != 0, 1))
    for i, j in zip(iu.tolist(), ju.tolist()):
        if g.is_undirected(i, j):
            if forb[j, i]:
                g.remove(i, j)
                g.add_directed(i, j)
            elif forb[i, j]:
                g.remove(i, j)
                g.add_directed(j, i)
            elif req[j, i]:
                g.remove(i, j)
                g.add_directed(j, i)
            elif req[i, j]:
                g.remove(i, j)
                g.add_directed(i, j)


def _apply_collider(g, x, y, z, priority):
    if priority == 0:
        g.orient(x, y)
        g.orient(z, y)
    elif priority == 1:
        for a in (x, z):
            if g.g[a, y] == 0:
                g.add_directed(a, y)
            elif g.g[a, y] == TAIL and g.g[y, a] == TAIL:
                g.orient(a, y)
            elif g.g[a, y] == ARROW and g.g[y, a] == TAIL:
                g.remove(a, y)
                g.add_bidirected(a, y)
    else:
        if (not g.is_fully_directed(y, x)) and (not g.is_fully_directed(y, z)):
            g.orient(x, y)
            g.orient(z, y)


def _max_p(pfn, requests):
    """requests: list of (x, z, [S...]); returns the max p over each list (one batched call)."""
    flat = [(x, z, S) for x, z, sets in requests for S in sets]
    ps = pfn(flat) if flat else []
    out, k = [], 0
    for _, _, sets in requests:
        out.append(max(ps[k : k + len(sets)]))
        k += len(sets)
    return out


def uc_sepset(g, sepset_union, priority, bk, pfn, conflicts):
    """causal-learn ``UCSepset.uc_sepset``; ``sepset_union[x, z, y]`` = y in some separating set."""
    ut = [(i, j, k) for (i, j, k) in g.find_unshielded_triples() if i < k]
    r0 = []
    for x, y, z in ut:
        if _bk_blocks(bk, x, y, z):
            continue
        if not sepset_union[x, z, y]:
            if priority in (0, 1, 2):
                _note_conflict(g, x, y, z, conflicts)
                _apply_collider(g, x, y, z, priority)
            else:
                r0.append((x, y, z))
    if priority in (0, 1, 2):
        return
    if priority == 3:
        req = [(x, z, [S for S in g.find_cond_sets(x, z) if y in S]) for x, y, z in r0]
    else:
        req = [(x, z, [S for S in g.find_cond_sets(x, z) if y not in S]) for x, y, z in r0]
    vals = _max_p(pfn, req)
    order = sorted(range(len(r0)), key=lambda t: vals[t], reverse=(priority == 4))
    for t in order:
        x, y, z = r0[t]
        if _bk_blocks(bk, x, y, z):
            continue
        _note_conflict(g, x, y, z, conflicts)
        _apply_collider(g, x, y, z, 2)


def _note_conflict(g, x, y, z, conflicts):
    """Record a collider x->y<-z that clashes with an orientation already made (y->x or y->z)."""
    if g.is_fully_directed(y, x) or g.is_fully_directed(y, z):
        conflicts.append((x, y, z))


def maxp(g, priority, bk, pfn, conflicts):
    ut = [(i, j, k) for (i, j, k) in g.find_unshielded_triples() if i < k]
    ut = [t for t in ut if not _bk_blocks(bk, *t)]
    req = []
    for x, y, z in ut:
        cs = g.find_cond_sets(x, z)
        req.append((x, z, [S for S in cs if y in S]))
        req.append((x, z, [S for S in cs if y not in S]))
    vals = _max_p(pfn, req)
    ucd = {}
    for t, (x, y, z) in enumerate(ut):
        with_y, without_y = vals[2 * t], vals[2 * t + 1]
        if without_y > with_y:
            if priority in (0, 1, 2):
                _note_conflict(g, x, y, z, conflicts)
                _apply_collider(g, x, y, z, priority)
            elif priority == 3:
                ucd[(x, y, z)] = with_y
            else:
                ucd[(x, y, z)] = without_y
    if priority in (0, 1, 2):
        return
    for x, y, z in sorted(ucd, key=lambda k: ucd[k], reverse=(priority == 4)):
        if _bk_blocks(bk, x, y, z):
            continue
        _note_conflict(g, x, y, z, conflicts)
        _apply_collider(g, x, y, z, 2)


def definite_maxp(g, alpha, priority, bk, pfn, conflicts):
    ut = [(i, j, k) for (i, j, k) in g.find_unshielded_triples() if i < k]
    flat_req = []
    for x, y, z in ut:
        cs = g.find_cond_sets(x, z)
        flat_req.append([S for S in cs if y in S])
        flat_req.append([S for S in cs if y not in S])
    flat = [(x, z, S) for t, (x, y, z) in enumerate(ut) for S in flat_req[2 * t] + flat_req[2 * t + 1]]
    ps = pfn(flat) if flat else []
    ucd, def_uc, def_non_uc = {}, [], []
    k = 0
    for t, (x, y, z) in enumerate(ut):
        pw = ps[k : k + len(flat_req[2 * t])]
        k += len(flat_req[2 * t])
        pwo = ps[k : k + len(flat_req[2 * t + 1])]
        k += len(flat_req[2 * t + 1])
        uc_bool = all(p <= alpha for p in pw)
        max_w = max([p for p in pw] + [0.0]) if uc_bool else 0.0
        nuc_bool = all(p <= alpha for p in pwo)
        max_wo = max(list(pwo) + [0.0])
        if uc_bool:
            if nuc_bool:
                if max_wo > max_w:
                    ucd[(x, y, z)] = max_wo if priority == 4 else max_w
                else:
                    def_non_uc.append((x, y, z))
            else:
                ucd[(x, y, z)] = max_wo if priority == 4 else max_w
        elif nuc_bool:
            def_non_uc.append((x, y, z))
    keys = list(ucd)
    if priority == 3:
        keys = sorted(ucd, key=lambda q: ucd[q])
    elif priority == 4:
        keys = sorted(ucd, key=lambda q: ucd[q], reverse=True)
    for x, y, z in keys:
        if _bk_blocks(bk, x, y, z):
            continue
        if (not g.is_fully_directed(y, x)) and (not g.is_fully_directed(y, z)):
            g.orient(x, y)
            g.orient(z, y)
            def_uc.append((x, y, z))
        else:
            conflicts.append((x, y, z))
    return def_uc, def_non_uc


def _bk_forbids(bk, a, b):
    """Orienting a -> b is blocked: a->b forbidden or b->a required."""
    if bk is None:
        return False
    forb, req = bk
    return bool(forb[a, b] or req[b, a])


def _try_orient(g, a, b, bk):
    if _bk_forbids(bk, a, b):
        return False
    if g.g[a, b] == 0:
        return False
    if g.is_ancestor_of(b, a):
        return False
    g.remove(a, b)
    g.add_directed(a, b)
    return True


def meek(g, bk, r4: bool = False):
    """causal-learn ``Meek.meek`` (R1-R3) to a fixpoint; optionally Meek's R4 (for background knowledge)."""
    ut = g.find_unshielded_triples()
    tri = g.find_triangles()
    kite = g.find_kites()
    loop = True
    while loop:
        loop = False
        for i, j, k in ut:
            if g.is_fully_directed(i, j) and g.is_undirected(j, k):
                if _try_orient(g, j, k, bk):
                    loop = True
        for i, j, k in tri:
            if g.is_fully_directed(i, j) and g.is_fully_directed(j, k) and g.is_undirected(i, k):
                if _try_orient(g, i, k, bk):
                    loop = True
        for i, j, k, l in kite:
            if (
                g.is_undirected(i, j)
                and g.is_undirected(i, k)
                and g.is_fully_directed(j, l)
                and g.is_fully_directed(k, l)
                and g.is_undirected(i, l)
            ):
                if _try_orient(g, i, l, bk):
                    loop = True
        if r4 and not loop:
            # R4: a - d -> c -> b, a - c (any mark), d !~ b, a - b  =>  a -> b
            d_ = g.d
            for a in range(d_):
                for b in range(d_):
                    if not g.is_undirected(a, b):
                        continue
                    hit = False
                    for c in range(d_):
                        if c in (a, b) or g.g[a, c] == 0 or not g.is_fully_directed(c, b):
                            continue
                        for dd in range(d_):
                            if dd in (a, b, c) or g.g[dd, b] != 0:
                                continue
                            if g.is_undirected(a, dd) and g.is_fully_directed(dd, c):
                                hit = True
                                break
                        if hit:
                            break
                    if hit and _try_orient(g, a, b, bk):
                        loop = True


def definite_meek(g, bk, def_uc, def_non_uc):
    tri = g.find_triangles()
    kite = g.find_kites()
    def_uc_set, def_non_set = set(def_uc), set(def_non_uc)
    loop = True
    while loop:
        loop = False
        for i, j, k in def_non_uc:
            if g.is_fully_directed(i, j) and g.is_undirected(j, k) and not _bk_forbids(bk, j, k):
                if g.g[j, k] == 0 or g.is_ancestor_of(k, j):
                    continue
                g.orient(j, k)
                loop = True
            elif g.is_fully_directed(k, j) and g.is_undirected(j, i) and not _bk_forbids(bk, j, i):
                if g.g[j, i] == 0 or g.is_ancestor_of(i, j):
                    continue
                g.orient(j, i)
                loop = True
        for i, j, k in tri:
            if g.is_fully_directed(i, j) and g.is_fully_directed(j, k) and g.is_undirected(i, k):
                if _try_orient(g, i, k, bk):
                    loop = True
        for i, j, k, l in kite:
            if (
                ((j, l, k) in def_uc_set or (k, l, j) in def_uc_set)
                and ((j, i, k) in def_non_set or (k, i, j) in def_non_set)
                and g.is_undirected(i, l)
            ):
                if _try_orient(g, i, l, bk):
                    loop = True
