r"""The fixed $|z|$ threshold that minimises the two-groups misclassification risk estimated from the data.

Two-groups model $f(z)=\pi_0\varphi(z)+(1-\pi_0)f_1(z)$, $f_1=\int\varphi(z-\mu)\,dG(\mu)$: $\pi_0$ is
Storey's bootstrap estimate (`estimate_pi0` on the two-sided p-values); $G$ is the nonparametric maximum likelihood
estimate (Kiefer & Wolfowitz 1956) on a symmetric grid of $K=51$ points over $[-\max|z|,\max|z|]$, by EM with
$\pi_0$ held fixed, so no shape is assumed for the alternative (normal, two-point, skewed) and $f_1$ keeps the
normal's light tails. With $\mathrm{fdr}=\pi_0\varphi/f$, for unit losses the Bayes rule rejects iff
$\mathrm{fdr}(z_i)<1/2$; among threshold rules $|z|>c$ (the relative-belief and horseshoe tests are both of that
form) the estimated risk is
$$\widehat R(c)=\sum_{|z_i|>c}\mathrm{fdr}(z_i)+\sum_{|z_i|\le c}\bigl(1-\mathrm{fdr}(z_i)\bigr)
=\sum_i\bigl(1-\mathrm{fdr}(z_i)\bigr)+\sum_{|z_i|>c}\bigl(2\,\mathrm{fdr}(z_i)-1\bigr).$$
$\widehat R$ changes only at the $|z_i|$: sort them in decreasing order and take the $k$ that minimises the partial
sums of $2\,\mathrm{fdr}-1$; the threshold lies halfway between the $k$-th and the $(k+1)$-th largest $|z_i|$
(one above the largest when $k=0$: reject nothing).

**Binned** (the default, `risk_cutoff` with ``binned=True``): past one pass over the tests, the cost does not depend
on $n$.

- $\pi_0$ is Storey's estimate from exact counts $\#\{p_i\ge\lambda\}$ (one pass; the same as unbinned).
- The NPMLE runs on a histogram of $z$ with `NUM_BINS` equal bins over $[-\max|z|,\max|z|]$: each bin enters with
  its count at the mean of its values, so each EM step costs $O(KJ)$ instead of $O(nJ)$ ($J=51$ atoms). Within a
  bin the first-order error averages out at the mean; what is left is of order $h^2\,\mathrm{Var}(\theta\mid z)$
  in the log-likelihood per test, for bins of width $h$.
- With $G$ = `num_cells` ($n$ rounded up to a power of two, between $2^{10}$ and $2^{15}$), $\log f$ is evaluated
  at $2G+1$ equally spaced points over $[-\max|z|,\max|z|]$ and interpolated linearly at each test (an error below
  $h_c^2\max|(\log f)''|/8$ for cells of width $h_c=\max|z|/G$, under $10^{-6}$ at $\max|z|=10$, $n\ge10^4$),
  so every $\mathrm{fdr}(z_i)$ and its gain $2\,\mathrm{fdr}(z_i)-1$ are per test; the gains are summed into $G$
  cells of $|z|$.
- $\widehat R$ is then known exactly at every cell edge, and the cutoff is the edge of least risk (the largest of
  ties: the fewest rejections), moved to the midpoint between the largest $|z_i|$ below it and the smallest at or
  above it (one more pass), as in the unbinned rule. Where every gap between neighbouring $|z_i|$ near the
  optimum holds a cell edge (cells of width about $6\times10^{-4}$ at $\max|z|=10$, $n=10^4$, against gaps of about
  $10^{-2}$ near a cutoff of 3) that is the unbinned rule's cutoff; otherwise its estimated risk is above the least
  one by at most the gains within one cell, which are near 0 there ($\mathrm{fdr}\approx1/2$ at the optimum).
- Rows go through in batches whose $\log f$ grids take at most 256 MB together, so many rows cost no more memory
  than a few.
"""

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

from ._binning import chunked_sum

#: Grid points of the NPMLE of the alternative's effect distribution, and EM steps.
NUM_GRID = 51
NUM_EM_STEPS = 200
#: Histogram bins of z for the binned NPMLE (over [-max|z|, max|z|]).
NUM_BINS = 512
#: The most cells of |z| over [0, max|z|] that carry the estimated risk's gains in the binned rule (and the grid
#: of log f); `num_cells` gives the number for n tests.
NUM_CELLS = 2**15


@jax.jit
def _risk_cutoff_from_lfdr(z, lfdr):
    """The cutoff on ``|z|`` minimising the estimated risk, per row (``z``, ``lfdr`` of shape ``(*batch, n)``)."""
    a = jnp.abs(z)
    order = jnp.argsort(-a, axis=-1)
    a_sorted = jnp.take_along_axis(a, order, axis=-1)
    gain = jnp.take_along_axis(2.0 * lfdr - 1.0, order, axis=-1)
    partial = jnp.concatenate([jnp.zeros_like(gain[..., :1]), jnp.cumsum(gain, axis=-1)], axis=-1)
    k = jnp.argmin(partial, axis=-1)  # number rejected; the first minimum, so ties reject fewer
    above = jnp.take_along_axis(a_sorted, jnp.maximum(k - 1, 0)[..., None], axis=-1)[..., 0]
    below = jnp.take_along_axis(a_sorted, jnp.minimum(k, a.shape[-1] - 1)[..., None], axis=-1)[..., 0]
    top = a_sorted[..., 0]
    # k = 0: above the largest |z|; k = n: below the smallest
    return jnp.where(k == 0, top + 1.0, jnp.where(k == a.shape[-1], 0.5 * below, 0.5 * (above + below)))


def _npmle_weights(points, counts, pi0, grid):
    """EM for the weights of the alternative's atoms ``grid`` (``(J,)``) with ``pi0`` held fixed, from ``points``
    carrying ``counts`` (the tests themselves with counts 1, or bins at their means with their counts)."""
    dt = points.dtype
    d2 = jnp.square(points[:, None] - grid[None, :])  # (points, J)
    ref = jnp.minimum(jnp.min(d2, axis=-1), points * points)  # likelihoods relative to each point's largest
    lik = jnp.exp(-0.5 * (d2 - ref[:, None]))
    lik0 = jnp.exp(-0.5 * (points * points - ref))
    weight = counts / jnp.maximum(jnp.sum(counts), 1.0)

    def step(_, w):
        f = pi0 * lik0 + (1.0 - pi0) * (lik @ w)
        resp = (lik.T @ (weight / f)) * w
        return resp / jnp.sum(resp)

    return jax.lax.fori_loop(0, NUM_EM_STEPS, step, jnp.full(grid.shape, 1.0 / grid.shape[0], dt))


@jax.jit
def npmle_lfdr(z):
    """fdr(z) = pi0 phi / f per test, with Storey's pi0 and the grid NPMLE of the alternative; ``(*batch, n)``."""
    from ._qvalues import storey_pi0_of_scores

    pi0 = jnp.clip(storey_pi0_of_scores(z), 0.0, 1.0)
    n = z.shape[-1]

    def row(zr, p0):
        grid = jnp.max(jnp.abs(zr)) * jnp.linspace(-1.0, 1.0, NUM_GRID, dtype=zr.dtype)
        w = _npmle_weights(zr, jnp.ones_like(zr), p0, grid)
        return jnp.minimum(jnp.exp(jnp.log(p0) - 0.5 * zr * zr - 0.5 * math.log(2.0 * math.pi)
                                   - _log_mixture(zr, p0, w, grid)), 1.0)

    return jax.vmap(row)(z.reshape(-1, n), pi0.reshape(-1)).reshape(z.shape)


def _log_mixture(t, pi0, w, grid):
    """log f(t) = log(pi0 phi(t) + (1 - pi0) sum_k w_k phi(t - u_k)) at the points ``t`` (``(T,)``)."""
    from jax.scipy.special import logsumexp

    terms = jnp.concatenate([(jnp.log(pi0) - 0.5 * t * t)[:, None],
                             jnp.log1p(-pi0) + jnp.log(w)[None, :] - 0.5 * jnp.square(t[:, None] - grid[None, :])],
                            axis=-1)
    return logsumexp(terms, axis=-1) - 0.5 * math.log(2.0 * math.pi)


def num_cells(n):
    """Cells of |z| for ``n`` tests: ``n`` rounded up to a power of two, in ``[2^10, NUM_CELLS]`` (finer than the
    gaps between neighbouring |z| near a cutoff, about ``1 / (n f(c))``, for the densities f of z-scores there)."""
    return int(min(NUM_CELLS, max(1024, 1 << max(0, int(n) - 1).bit_length())))


#: Bytes a batch of rows of the binned rule may take at once (its log f grid is 52 terms at 2 cells + 1 points).
_ROW_BUDGET = 2**28


def _binned_cutoff_row(z):
    """The binned rule on one row (see the module docstring); each pass over the tests goes chunk by chunk."""
    from ._qvalues import DEFAULT_LAMBDAS, pi0_from_buckets, storey_buckets

    dt = z.dtype
    cells = num_cells(z.shape[-1])
    top = jnp.max(jnp.abs(z))
    scale = jnp.where(top > 0, top, 1.0)

    # pass 1: Storey's counts and the histogram of z (NUM_BINS bins over [-top, top]) with each bin's sum
    def summary(c):
        k = jnp.clip(jnp.floor((c + scale) * (NUM_BINS / (2.0 * scale))).astype(jnp.int32), 0, NUM_BINS - 1)
        return (storey_buckets(2.0 * ndtr(-jnp.abs(c)), DEFAULT_LAMBDAS),
                jnp.zeros(NUM_BINS, jnp.int32).at[k].add(1), jnp.zeros(NUM_BINS, dt).at[k].add(c))

    # counts in int32 (a float32 count stops growing at 2^24)
    init = (jnp.zeros(len(DEFAULT_LAMBDAS) + 1, jnp.int32), jnp.zeros(NUM_BINS, jnp.int32), jnp.zeros(NUM_BINS, dt))
    hist, counts, sums = chunked_sum(summary, z, init)
    counts = counts.astype(dt)
    pi0 = jnp.clip(pi0_from_buckets(hist, DEFAULT_LAMBDAS, "bootstrap", 3.0, dt)[0], 0.0, 1.0)
    # the NPMLE with each bin at the mean of its values
    centres = scale * ((jnp.arange(NUM_BINS, dtype=dt) + 0.5) * (2.0 / NUM_BINS) - 1.0)
    means = jnp.where(counts > 0, sums / jnp.maximum(counts, 1.0), centres)
    grid = top * jnp.linspace(-1.0, 1.0, NUM_GRID, dtype=dt)
    w = _npmle_weights(means, counts, pi0, grid)
    # log f on 2 cells + 1 points over [-top, top]
    log_f = _log_mixture(scale * jnp.linspace(-1.0, 1.0, 2 * cells + 1, dtype=dt), pi0, w, grid)

    def cell_of(c):
        return jnp.clip(jnp.floor(jnp.abs(c) * (cells / scale)).astype(jnp.int32), 0, cells - 1)

    # pass 2: each test's fdr (log f interpolated) and its gain 2 fdr - 1, summed over cells of |z|
    def gains(c):
        s = (c + scale) * (cells / scale)
        j = jnp.clip(jnp.floor(s).astype(jnp.int32), 0, 2 * cells - 1)
        log_fz = log_f[j] + (s - j.astype(dt)) * (log_f[j + 1] - log_f[j])
        lfdr = jnp.minimum(jnp.exp(jnp.log(pi0) - 0.5 * c * c - 0.5 * math.log(2.0 * math.pi) - log_fz), 1.0)
        return jnp.zeros(cells, dt).at[cell_of(c)].add(2.0 * lfdr - 1.0)

    g = chunked_sum(gains, z, jnp.zeros(cells, dt))
    # R at the edge e_c is the sum of the gains over the cells from c up; edges 0..cells
    partial = jnp.concatenate([jnp.cumsum(g[::-1])[::-1], jnp.zeros((1,), dt)])
    # the largest edge of least risk (the fewest rejections)
    edge = cells - jnp.argmin(partial[::-1]).astype(jnp.int32)
    # pass 3: between the largest |z| below the edge and the smallest at or above it, as the unbinned rule
    def gap(c):
        cell, a = cell_of(c), jnp.abs(c)
        return jnp.max(jnp.where(cell < edge, a, 0.0)), jnp.min(jnp.where(cell >= edge, a, jnp.inf))

    below, above = chunked_sum(gap, z, (jnp.zeros((), dt), jnp.full((), jnp.inf, dt)),
                               combine=lambda t, u: (jnp.maximum(t[0], u[0]), jnp.minimum(t[1], u[1])))
    return jnp.where(edge == cells, top + 1.0, 0.5 * (below + above))


@jax.jit
def _binned_cutoff(z):
    n = z.shape[-1]
    # rows in batches whose log f grids fit the budget: the memory does not grow with the number of rows
    per_row = 4 * (2 * num_cells(n) + 1) * (NUM_GRID + 1) * jnp.dtype(z.dtype).itemsize
    rows = z.reshape(-1, n)
    batch = max(1, min(rows.shape[0], _ROW_BUDGET // per_row))
    return jax.lax.map(_binned_cutoff_row, rows, batch_size=batch).reshape(z.shape[:-1])


def risk_cutoff(z, binned=True):
    """The estimated-risk-minimising cutoff on ``|z|`` per row of standardised scores ``z`` (``(*batch, n)``):
    binned (the default) or on every test (``binned=False``)."""
    if binned:
        return _binned_cutoff(z)
    return _risk_cutoff_from_lfdr(z, npmle_lfdr(z))
