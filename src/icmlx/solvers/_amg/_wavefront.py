"""Sequential greedy graph algorithms in node order, computed in wavefront rounds (host NumPy, set-up time only).

A greedy algorithm that visits the nodes ``0, 1, …, n−1`` and decides node ``i`` from the decisions of the
lower-numbered nodes it can see gives the same answer when every node decides as soon as all the lower nodes it can
see have decided (Jones & Plassmann 1993, with the node order as the fixed priority). Each round decides a whole
frontier at once with vectorised NumPy; a node is released once, so the total work is the number of (walks along)
edges, and the number of rounds is the longest decreasing path of the dependency graph (``O(√n)`` for a grid in its
natural order), not ``n``.

- `greedy_colors`: node ``i`` takes the smallest colour that none of its lower neighbours holds (the
  sequential greedy colouring; 2 colours for a 5-point stencil, 4 for a 9-point one, in the natural order).
- `lexicographic_mis`: node ``i`` joins the set unless a lower node within ``hops`` steps already has (the
  lexicographically first maximal independent set of the graph or of its square). With ``hops=2`` its members are
  the roots of pass 1 of standard aggregation; with ``hops=1`` on the leftover nodes, those of pass 3. A node also
  decides early, as soon as a member appears within ``hops`` steps of it.

The graphs live in a padded table ``C`` of closed neighbourhoods (``(n + 1, K + 2)``: each row sorted, the node
itself included, padded with the sentinel ``n``; row ``n`` is all sentinels), so a round is a few fixed-width
gathers rather than ragged CSR slices.

References:
  Jones & Plassmann, SIAM J. Sci. Comput. 14 (1993) 654–669; Blelloch, Fineman & Shun, SPAA 2012
  (arXiv:1202.3205), greedy MIS in rounds; Bell, Dalton & Olson, SIAM J. Sci. Comput. 34 (2012) C123–C152
  (MIS-2 based aggregation in parallel rounds).
"""

import numpy as np

__all__: list[str] = []

# above this many neighbours a row of the padded table (and a 64-bit colour mask) no longer fits: the callers fall
# back to their compiled node-by-node loops
MAX_DEGREE = 62


def closed_table(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(C, low)``: the padded closed-neighbourhood table of a symmetric CSR pattern without its diagonal, with
    sorted columns in each row, and the number of lower neighbours of each node (its position in its row)."""
    n = indptr.size - 1
    deg = np.diff(indptr)
    k = int(deg.max()) if n else 0
    rows = np.repeat(np.arange(n, dtype=np.int32), deg)
    above = indices > rows
    low = deg - np.bincount(rows[above], minlength=n)
    slot = np.arange(indices.size, dtype=np.int32) - np.repeat(indptr[:-1].astype(np.int32), deg) + above
    C = np.full((n + 1, k + 2), n, np.int32)  # (at least one sentinel ends every row)
    C[rows, slot] = indices
    C[np.arange(n), low] = np.arange(n, dtype=np.int32)
    return C, low


_SEQ = np.arange(1 << 16, dtype=np.int32)  # (grown on demand: a slice of it replaces an arange per call)


def _seq(m):
    global _SEQ
    if m > _SEQ.size:
        _SEQ = np.arange(max(m, 2 * _SEQ.size), dtype=np.int32)
    return _SEQ[:m]


def _distinct(v, tag):
    """The distinct values of ``v`` (in no particular order), through the scratch array ``tag`` (one slot per
    node): cheaper than a sort or hash for the short lists of a round."""
    seq = _seq(v.size)
    tag[v] = seq
    return v[tag[v] == seq]


def _advance(C, ptr, rows, decided):
    """Move the pointer of each row in ``rows`` (a column of ``C``) to its lowest undecided entry, so that
    ``C[k, ptr[k]]`` is the lowest undecided node of row ``k`` (the sentinel ``n``, never decided, ends every row);
    return the rows that moved and their new heads. Entries left of a pointer are decided, so the first undecided
    entry of the whole row is the new position (one gather and an ``argmin`` instead of a step per entry)."""
    rows = rows[decided[C[rows, ptr[rows]]]]
    R = C[rows]
    p = np.argmin(decided[R], axis=1)
    ptr[rows] = p
    return rows, R[_seq(rows.size), p]


def _upper_table(C):
    """``C`` with its lower entries (and the node itself) replaced by the sentinel: the nodes a decision
    releases."""
    n = C.shape[0] - 1
    return np.where(C > np.arange(n + 1, dtype=C.dtype)[:, None], C, n)


def _release(U, done, count, tag):
    """Decrement the counters of the upper neighbours of ``done`` (``U`` from `_upper_table`); return the
    nodes whose counter reached zero."""
    W = U[done].ravel()
    np.subtract.at(count, W, 1)
    return _distinct(W[count[W] == 0], tag)


def greedy_colors(C: np.ndarray, low: np.ndarray) -> np.ndarray:
    """The sequential greedy colouring in node order of the graph of `closed_table` ``(C, low)``.

    A counter per node holds how many lower neighbours are still uncoloured. Returns ``int64[n]`` colours; no two
    neighbours share one, and the result equals the node-by-node loop's.
    """
    n = C.shape[0] - 1
    if C.shape[1] > MAX_DEGREE + 2:
        raise ValueError(f"greedy_colors: a node has {C.shape[1] - 2} neighbours, more than {MAX_DEGREE}")
    count = np.append(low, 1 << 40).astype(np.int64)  # the sentinel never reaches zero
    bits = np.zeros(n + 1, np.int64)  # 1 << colour, 0 while uncoloured (and for the sentinel)
    tag = np.zeros(n + 1, np.int32)
    U = _upper_table(C)
    front = np.nonzero(low == 0)[0]
    while front.size:
        used = np.bitwise_or.reduce(bits[C[front]], axis=1)
        bits[front] = (used + 1) & ~used  # the lowest colour not in use
        front = _release(U, front, count, tag)
    return np.log2(bits[:n]).astype(np.int64)


def lexicographic_mis(C: np.ndarray, low: np.ndarray, hops: int) -> np.ndarray:
    """The lexicographically first maximal independent set of the graph of `closed_table` ``(C, low)``
    (``hops=1``) or of its square (``hops=2``: members at least three steps apart). Nodes without neighbours stay
    out of it.

    Each row keeps its lowest undecided node; node ``i`` is ready once every row within ``hops − 1`` steps has
    reached ``i``. Returns a ``bool[n]`` mask.
    """
    if hops == 2:
        return _lexicographic_mis2(C, low)
    n = C.shape[0] - 1
    isolated = C[:n, 1] == n  # (row = self, then only sentinels)
    state = np.zeros(n + 1, np.int8)  # 0 undecided, 1 in the set, 2 out, 3 isolated (and the sentinel)
    state[:n][isolated] = 3
    state[n] = 3
    decided = np.append(isolated, False)
    ptr = np.zeros(n + 1, np.int64)
    tag = np.zeros(n + 1, np.int32)
    front = np.nonzero((low == 0) & ~isolated)[0]
    while front.size:  # node i is ready once the head of its own row is i
        state[front] = 1
        near = C[front].ravel()
        out = _distinct(near[state[near] == 0], tag)
        state[out] = 2
        decided[front] = True
        decided[out] = True
        rows, head = _advance(C, ptr, _distinct(C[np.concatenate([front, out])].ravel(), tag), decided)
        front = rows[(head == rows) & (state[rows] == 0)]
    return state[:n] == 1


def _lexicographic_mis2(C: np.ndarray, low: np.ndarray) -> np.ndarray:
    """`lexicographic_mis` with ``hops=2`` (pass 1 of standard aggregation, the set-up's largest host cost),
    with fewer array passes per round.

    Each row keeps its head (lowest undecided node) itself rather than a pointer. The rows whose head a round
    decides are found from the decided nodes' own neighbourhoods (row ``k`` with ``head[k] == v`` for a decided
    ``v ∈ N[k]``: each row once, since it has one head), so no list of touched rows is deduplicated; and the
    sentinel's counter never reaches zero, so a new head needs no state check.
    """
    n = C.shape[0] - 1
    isolated = C[:n, 1] == n
    state = np.zeros(n + 1, np.int8)  # 0 undecided, 1 in the set, 2 out, 3 isolated (and the sentinel)
    state[:n][isolated] = 3
    state[n] = 3
    decided = np.append(isolated, False)
    head = C[:, 0].copy()  # (row n: the sentinel)
    tag = np.zeros(n + 1, np.int32)
    wait = np.append((C[:n] < n).sum(axis=1) - np.bincount(head[:n], minlength=n + 1)[:n], 1 << 40)
    wait[:n][isolated] = 1 << 40  # (an isolated node heads its own row only: it never joins)
    front = np.nonzero(wait[:n] == 0)[0]
    while front.size:
        state[front] = 1
        near = C[C[front]].ravel()
        out = _distinct(near[state[near] == 0], tag)
        state[out] = 2
        done = np.concatenate([front, out])
        decided[done] = True
        K = C[done]
        rows = K[head[K] == done[:, None]]  # the rows whose head was just decided
        R = C[rows]
        new = R[_seq(rows.size), np.argmin(decided[R], axis=1)]
        head[rows] = new
        np.subtract.at(wait, new, 1)
        front = _distinct(new[wait[new] == 0], tag)
    return state[:n] == 1
