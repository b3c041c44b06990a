"""An ELL matrix of the multigrid set-up read on the host: the independent dense reference the solver tests
compare products and Galerkin identities against."""

import numpy as np


def ell_dense(E) -> np.ndarray:
    """An `EllMatrix` (or `SplitEllMatrix`, with its overflow slots) as a dense float64 array, summed from its
    (index, value) slots in NumPy."""
    idx, val = np.asarray(E.idx), np.asarray(E.val, np.float64)
    D = np.zeros(E.shape)
    np.add.at(D, (np.broadcast_to(np.arange(E.shape[0]), idx.shape), idx), val)
    if hasattr(E, "over_rows"):
        oi, ov = np.asarray(E.over_idx), np.asarray(E.over_val, np.float64)
        np.add.at(D, (np.broadcast_to(np.asarray(E.over_rows), oi.shape), oi), ov)
    return D
