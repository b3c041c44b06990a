r"""Contingency statistics by per-sample counts in flat tables: X² / G² and their dof with O(n) work per test.

The plan of `._contingency` for tables too large for a dense ``(strata, K, K)`` scatter whose cells
``prod card(S) * card(x) * card(y)`` still fit a flat buffer of `FLAT_CELLS` (high-cardinality variables given
one or two others). Each test scatters its samples' cell, row, column and stratum codes into four zeroed
buffers carried through the loop over tests, gathers each sample's counts $O, R, C, M$ back and zeroes the
touched entries again, so the work follows ``n``, never the buffers' size, and nothing is sorted:

$$X^2 = \sum_i \frac{O_i M_i}{R_i C_i} - n,\qquad G^2 = 2 \sum_i \log \frac{O_i M_i}{R_i C_i}$$

(a cell of count $O$ appears $O$ times in the sum over samples $i$). The number of non-empty rows of a
stratum is $\sum_{i \in \text{stratum}} 1/R_i$ (each row counts $R \cdot 1/R$), likewise for columns, which
gives causal-learn's dof $\sum_{\text{observed strata}} (r - 1)(c - 1)$ without a table over the strata.
"""

import functools

import jax
import jax.numpy as jnp

from ..._checks import default_float_dtype

__all__: list[str] = []

#: Largest flat table ``prod card(S) * card(x) * card(y)`` counted by this plan (int32 buffers of this many, a half,
#: a half and a quarter entries, and two float ones of a quarter, allocated once per batch); larger tables take the
#: sorted plan of `._sorted_counts`, whose cost per test does not grow with the table. ``0`` turns the plan off.
#: On the mildew-like network of ``benchmarks/structure_scale.py`` (n = 5,000) a cap of ``2^20`` ran PC faster
#: and in less memory than ``2^22``: zeroing the largest buffers once per batch cost more than sorting the few
#: tests that need them.
FLAT_CELLS = 2**20


@functools.partial(jax.jit, static_argnames=("g_square", "cells", "length"))
def _chi_square_flat_kernel(data_t, cards, x, y, s, m, n, *, g_square, cells, length):
    """X² (or G²) and dof of the first ``m`` (dynamic) of ``b`` padded tests, one per loop step, over the
    first ``n`` (traced) of ``length`` samples. ``data_t`` is ``(d, n_pad)`` codes, ``s`` padded with a
    constant variable (one category, code 0), ``cells`` the flat buffer size (``>= prod card(S) card x card
    y`` for every test; cardinalities are at least 2 for real variables)."""
    fdt = default_float_dtype()
    b = x.shape[0]
    live = jnp.arange(length, dtype=jnp.int32) < n
    w = live.astype(jnp.int32)

    def row_of(v):
        return jax.lax.dynamic_slice(data_t, (v.astype(jnp.int32), jnp.int32(0)), (1, length))[0].astype(jnp.int32)

    def count(buf, idx, add):
        """Scatter ``add`` at ``idx``, gather the totals, zero the touched entries (after the gather: the zeroing
        value depends on it through a term that is always 0, so XLA orders it last and updates in place)."""
        buf = buf.at[idx].add(add)
        tot = buf[idx]
        zero = jnp.where(tot < 0, tot, jnp.zeros((), buf.dtype))  # counts and sums of 1/R are never negative
        return buf.at[idx].set(zero), tot

    def body(i, carry):
        stat, dof, cb, rb, kb, mb, fr, fc = carry
        cx, cy = cards[x[i]], cards[y[i]]
        r = jnp.zeros(length, jnp.int32)
        for j in range(s.shape[1]):  # static unroll over the padded |S| (padding: one category, code 0)
            r = r * cards[s[i, j]] + row_of(s[i, j])
        xv, yv = row_of(x[i]), row_of(y[i])
        row, col = r * cx + xv, r * cy + yv
        cb, o = count(cb, row * cy + yv, w)
        rb, rr = count(rb, row, w)
        kb, cc = count(kb, col, w)
        mb, mm = count(mb, r, w)
        o_f, r_f, c_f, m_f = (jnp.where(live, v, 1).astype(fdt) for v in (o, rr, cc, mm))
        ratio = o_f * m_f / (r_f * c_f)
        if g_square:
            st = 2.0 * jnp.sum(jnp.where(live, jnp.log(ratio), 0.0))
        else:
            st = jnp.maximum(jnp.sum(jnp.where(live, ratio, 0.0)) - n.astype(fdt), 0.0)
        fr, nzr = count(fr, r, jnp.where(live, 1.0 / r_f, 0.0))  # non-empty rows of each sample's stratum
        fc, nzc = count(fc, r, jnp.where(live, 1.0 / c_f, 0.0))
        per = (jnp.round(nzr) - 1.0) * (jnp.round(nzc) - 1.0) / m_f  # each stratum's (r-1)(c-1), once
        df = jnp.round(jnp.sum(jnp.where(live, per, 0.0))).astype(jnp.int32)
        return stat.at[i].set(st), dof.at[i].set(df), cb, rb, kb, mb, fr, fc

    init = (jnp.zeros(b, fdt), jnp.zeros(b, jnp.int32), jnp.zeros(cells, jnp.int32),
            jnp.zeros(cells // 2, jnp.int32), jnp.zeros(cells // 2, jnp.int32), jnp.zeros(cells // 4, jnp.int32),
            jnp.zeros(cells // 4, fdt), jnp.zeros(cells // 4, fdt))
    out = jax.lax.fori_loop(0, m, body, init)
    return out[0], out[1]
