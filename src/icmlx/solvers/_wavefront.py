"""Sequential greedy graph algorithms in node order, computed in wavefront rounds (host NumPy, set-up time only).

A greedy algorithm that visits the nodes ``0, 1, …, n−1`` and decides node ``i`` from the decisions of the
lower-numbered nodes it can see gives the same answer when every node decides as soon as all the lower nodes it can
see have decided (Jones & Plassmann 1993, with the node order as the fixed priority). Each round decides a whole
frontier at once with vectorised NumPy; a node is released once, so the total work is the number of (walks along)
edges, and the number of rounds is the longest decreasing path of the dependency graph (``O(√n)`` for a grid in its
natural order), not ``n``. A counter per node holds how many lower nodes it still waits for.

- :func:`greedy_colors`: node ``i`` takes the smallest colour that none of its lower neighbours holds (the
  sequential greedy colouring; 2 colours for a 5-point stencil, 4 for a 9-point one, in the natural order).
- :func:`lexicographic_mis`: node ``i`` joins the set unless a lower node within ``hops`` steps already has (the
  lexicographically first maximal independent set of the graph or of its square). With ``hops=2`` its members are
  the roots of pass 1 of standard aggregation; with ``hops=1`` on the leftover nodes, those of pass 3. A node also
  decides early, as soon as a member appears within ``hops`` steps of it.

The graphs live in a padded table ``C`` of closed neighbourhoods (``(n + 1, K + 1)``: each row sorted, the node
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
    C = np.full((n + 1, k + 1), n, np.int32)
    C[rows, slot] = indices
    C[np.arange(n), low] = np.arange(n, dtype=np.int32)
    return C, low


def _distinct(v, tag):
    """The distinct values of ``v`` (in no particular order), through the scratch array ``tag`` (one slot per
    node): cheaper than a sort or hash for the short lists of a round."""
    seq = np.arange(v.size, dtype=np.int32)
    tag[v] = seq
    return v[tag[v] == seq]


def _release(C, done, count, hops, tag):
    """Decrement the counters of the nodes above each of ``done`` within ``hops`` steps (once per walk, as the
    counters were set up); return the nodes whose counter reached zero."""
    W = C[done]
    if hops == 2:
        W = C[W].reshape(done.size, -1)
    n = C.shape[0] - 1
    W = np.where(W > done[:, None], W, n).ravel()
    np.subtract.at(count, W, 1)
    return _distinct(W[count[W] == 0], tag)


def greedy_colors(C: np.ndarray, low: np.ndarray) -> np.ndarray:
    """The sequential greedy colouring in node order of the graph of :func:`closed_table` ``(C, low)``.

    Returns ``int64[n]`` colours; no two neighbours share one, and the result equals the node-by-node loop's.
    """
    n = C.shape[0] - 1
    if C.shape[1] > MAX_DEGREE + 1:
        raise ValueError(f"greedy_colors: a node has {C.shape[1] - 1} neighbours, more than {MAX_DEGREE}")
    count = np.append(low, 1 << 40)  # the sentinel never reaches zero
    bits = np.zeros(n + 1, np.int64)  # 1 << colour, 0 while uncoloured (and for the sentinel)
    tag = np.zeros(n + 1, np.int32)
    front = np.nonzero(low == 0)[0]
    while front.size:
        used = np.bitwise_or.reduce(bits[C[front]], axis=1)
        bits[front] = (used + 1) & ~used  # the lowest colour not in use
        front = _release(C, front, count, 1, tag)
    return np.log2(bits[:n]).astype(np.int64)


def lexicographic_mis(C: np.ndarray, low: np.ndarray, hops: int) -> np.ndarray:
    """The lexicographically first maximal independent set of the graph of :func:`closed_table` ``(C, low)``
    (``hops=1``) or of its square (``hops=2``: members at least three steps apart). Nodes without neighbours stay
    out of it.

    Returns a ``bool[n]`` mask.
    """
    n = C.shape[0] - 1
    if hops == 1:
        count = low.astype(np.int64)
    else:
        # walks i → k → j (k, j in closed neighbourhoods) that end below i: summed over the rows k holding i, the
        # position of i in row k (the rows are sorted)
        pos = np.broadcast_to(np.arange(C.shape[1]), (n, C.shape[1]))
        count = np.bincount(C[:n].ravel(), weights=pos.ravel(), minlength=n + 1)[:n].astype(np.int64)
    count = np.append(count, 1 << 40)
    isolated = C[:n, 1] == n  # (row = self, then only sentinels)
    # 0 undecided, 1 in the set, 2 out (a member within reach), 3 never (isolated; and the sentinel)
    state = np.append(np.where(isolated, 3, 0), 3).astype(np.int8)
    tag = np.zeros(n + 1, np.int32)
    iso = np.nonzero(isolated)[0]
    if iso.size:
        _release(C, iso, count, hops, tag)
    front = np.nonzero((count[:n] == 0) & (state[:n] == 0))[0]
    while front.size:
        state[front] = 1
        W = C[front]
        if hops == 2:
            W = C[W]
        W = W.ravel()
        out = _distinct(W[state[W] == 0], tag)
        state[out] = 2
        nxt = _release(C, np.concatenate([front, out]), count, hops, tag)
        front = nxt[state[nxt] == 0]
    return state[:n] == 1
