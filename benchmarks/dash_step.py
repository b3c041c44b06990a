"""Benchmark: DASH optimizer-step time vs a per-block (looped) Shampoo, optax.adam and optax.contrib.muon.

Part 1 (optimizer step). A transformer-shaped parameter tree (embeddings, attention qkv/out, MLP in/out,
layer-norm vectors). Side by side in one run:

* icmlx DASH, stacked ``(N, B, B)`` blocks, with each inverse-root method (``newton_db``, ``coupled_newton``,
  ``chebyshev``, ``eigh``), inverse roots refreshed every step (``precondition_frequency=1``, the setting of the
  paper's timing table) and every 10 steps, with the default ``root_chunk_size="auto"`` (on CPU: the stack is
  solved in cache-sized chunks inside one compiled ``lax.map`` loop, 1 block at a time for 128x128 float32;
  on GPU/TPU: one batched call); Newton-DB also with ``root_chunk_size=None`` (one batched call over the
  whole stack, which on CPU streams every operand from memory at each matmul);
* the same update computed block by block in a Python loop, one jitted root per block (the way Distributed
  Shampoo works), with ``eigh`` and with ``newton_db``;
* ``optax.adam`` and ``optax.contrib.muon`` as references;
* JAX Distributed Shampoo (``precondition-opt``) beside DASH at the first block size, roots every step and every
  10, paired (the measurement of ``benchmarks/dash_vs_shampoo.py``, on this tree; skipped when not installed;
  ``--shampoo-only`` runs just that).

Part 2 (inverse roots). One ``(N, B, B)`` stack of SPD matrices: time and accuracy (vs float64 ``numpy.eigh``)
of each ``matrix_inverse_root`` method, against batched ``eigh``.

The two target ratios (stacked Newton-DB against the per-block loop with Newton-DB and with eigh) are also
measured *paired*: the baseline and the stacked step are timed alternately, back to back, and the median of
the per-pair ratios is reported, so that load drifting over the run (a shared 2-core box) cancels out.

Correctness is checked before timing (the looped baseline reproduces DASH's update; DASH with preconditioning
disabled reproduces ``optax.adam``).

Usage::

    python benchmarks/dash_step.py --quick
    python benchmarks/dash_step.py                 # CPU default size
    python benchmarks/dash_step.py --size large    # for a GPU
    python benchmarks/dash_step.py --shampoo-only --size small   # d = 256: DASH vs Distributed Shampoo only
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import print_table, time_fn, write_results  # noqa: E402
from icmlx.optim import (  # noqa: E402
    Chebyshev,
    CoupledNewton,
    Eigh,
    FrobeniusScaling,
    NewtonDB,
    dash,
    matrix_inverse_root,
    scale_by_dash,
)
from icmlx.optim._inverse_root import _resolve_chunk_size  # noqa: E402

_EX = Path(__file__).resolve().parents[1] / "examples" / "dash_shampoo.py"
_spec = importlib.util.spec_from_file_location("dash_shampoo_example", _EX)
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
LoopShampoo = _example.LoopShampoo

SIZES = {
    # d_model, layers, vocab, block sizes
    "quick": (128, 1, 256, (128,)),
    "small": (256, 2, 512, (128, 256)),
    "large": (1024, 8, 32000, (256, 1024)),
}


def transformer_params(d: int, layers: int, vocab: int, key) -> dict:
    shapes = {"embed": (vocab, d), "final_norm": (d,)}
    for i in range(layers):
        shapes |= {f"l{i}.qkv": (d, 3 * d), f"l{i}.out": (d, d), f"l{i}.mlp_in": (d, 4 * d),
                   f"l{i}.mlp_out": (4 * d, d), f"l{i}.norm1": (d,), f"l{i}.norm2": (d,)}
    keys = jax.random.split(key, len(shapes))
    return {k: 0.02 * jax.random.normal(kk, s, jnp.float32) for kk, (k, s) in zip(keys, shapes.items())}


def rel_diff(a: dict, b: dict) -> float:
    num = sum(float(jnp.sum((a[k] - b[k]) ** 2)) for k in a)
    den = sum(float(jnp.sum(b[k] ** 2)) for k in b)
    return float(np.sqrt(num / den))


def bench_step(size: str, repeats: int) -> list[dict]:
    d, layers, vocab, blocks = SIZES[size]
    params = transformer_params(d, layers, vocab, jax.random.key(0))
    grads = jax.tree.map(lambda p: jax.random.normal(jax.random.key(1), p.shape, p.dtype), params)
    # low-rank-ish gradients like a real model's: add a rank-8 component
    grads = {k: g + (jnp.outer(g[:, 0], g[0, :8].sum() * jnp.ones(g.shape[1])) if g.ndim == 2 else 0.0)
             for k, g in grads.items()}
    rows = []
    runners = {}  # (optimizer, root, block, freq) -> (callable, steps per call): for the paired ratios

    # correctness first: preconditioning off == optax.adam
    with jax.numpy_dtype_promotion("standard"):
        ua, _ = jax.jit(optax.adam(1e-3).update)(grads, optax.adam(1e-3).init(params), params)
    off = dash(1e-3, block_size=blocks[0], start_preconditioning_step=10**9)
    uo, _ = jax.jit(off.update)(grads, off.init(params), params)
    err_adam = rel_diff(uo, ua)
    assert err_adam < 1e-5, err_adam

    def add(name, method, block, freq, t, note=""):
        rows.append({"size": size, "optimizer": name, "root": method, "block": block, "freq": freq,
                     "ms_per_step": 1e3 * t["median_s"], "min_ms": 1e3 * t["min_s"], "iqr_ms": 1e3 * t["iqr_s"],
                     "compile_s": t["compile_s"], "note": note})

    def time_opt(opt):
        update = jax.jit(opt.update)
        state = jax.jit(opt.init)(params)
        state = update(grads, state, params)[1]  # past step 1 (its refresh is not a steady state)

        def run():
            return update(grads, state, params)[0]

        return time_fn(run, repeats=repeats), run

    with jax.numpy_dtype_promotion("standard"):
        add("optax.adam", "-", "-", "-", time_opt(optax.adam(1e-3))[0])
        add("optax.contrib.muon", "NS5", "-", "-", time_opt(optax.contrib.muon(1e-3))[0])

    for block in blocks:
        n_blocks = sum(int(np.ceil(p.shape[0] / block) * np.ceil(p.shape[1] / block))
                       for p in params.values() if p.ndim == 2)
        # correctness: the looped baseline reproduces the stacked update (Newton-DB in both)
        sd = scale_by_dash(block, precondition_frequency=1, inverse_root="newton_db", **_example.LOOP_SETTINGS)
        u_dash, _ = jax.jit(sd.update)(grads, sd.init(params), params)
        u_loop = LoopShampoo(params, block, "newton_db", precondition_frequency=1).step(grads)
        err = rel_diff(u_dash, u_loop)
        assert err < 1e-3, err
        for freq in (1, 10):
            for method, chunk in (("newton_db", "auto"), ("newton_db", None), ("coupled_newton", "auto"),
                                  ("chebyshev", "auto"), ("eigh", "auto")):
                opt = dash(1e-3, block_size=block, precondition_frequency=freq, inverse_root=method,
                           root_chunk_size=chunk)
                if freq == 10:
                    # average over a full refresh period: time 10 consecutive steps
                    update = jax.jit(opt.update)
                    state = jax.jit(opt.init)(params)
                    state = update(grads, state, params)[1]

                    def ten(update=update, state=state):
                        s = state
                        for _ in range(10):
                            u, s = update(grads, s, params)
                        return u

                    t = time_fn(ten, repeats=max(1, repeats // 3))
                    t = {k: (v / 10 if k.endswith("_s") and k != "compile_s" else v) for k, v in t.items()}
                    run_opt = (ten, 10)
                else:
                    t, run = time_opt(opt)
                    run_opt = (run, 1)
                name = "icmlx DASH (stacked)" if chunk == "auto" else "icmlx DASH (stacked, one call)"
                runners[(name, method, block, freq)] = run_opt
                used = _resolve_chunk_size(chunk, method, block, jnp.float32)
                add(name, method, block, freq, t, f"{n_blocks} blocks, chunk {used or 'none'}")
            for method in ("eigh", "newton_db"):
                loop = LoopShampoo(params, block, method, precondition_frequency=freq)
                loop.step(grads)  # compile the per-shape kernels

                def run_loop(loop=loop, freq=freq):
                    for _ in range(freq):
                        u = loop.step(grads)
                    return u

                t = time_fn(run_loop, repeats=max(1, repeats // 3))
                t = {k: (v / freq if k.endswith("_s") and k != "compile_s" else v) for k, v in t.items()}
                add("per-block loop", method, block, freq, t, f"baseline err {err:.1e}")
                runners[("per-block loop", method, block, freq)] = (run_loop, freq)
    return rows, runners


def paired_ratios(runners: dict, size: str, pairs: int) -> list[dict]:
    """Target ratios from interleaved (paired) timings: baseline and stacked DASH run alternately.

    On a shared or thermally throttled machine the load drifts over a benchmark; timing the two sides of a
    ratio back to back, ``pairs`` times in alternating order, and taking the median of the per-pair ratios
    cancels that drift (the min-based ratios above compare runs made minutes apart)."""

    def once(fn):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        return time.perf_counter() - t0

    out = []
    for block in SIZES[size][3]:
        for freq in (1, 10):
            st, st_k = runners[("icmlx DASH (stacked)", "newton_db", block, freq)]
            for base in ("newton_db", "eigh"):
                lp, lp_k = runners[("per-block loop", base, block, freq)]
                rs = []
                for i in range(pairs):
                    if i % 2:
                        tl, ts = once(lp) / lp_k, once(st) / st_k
                    else:
                        ts, tl = once(st) / st_k, once(lp) / lp_k
                    rs.append(tl / ts)
                q1, med, q3 = np.percentile(rs, [25, 50, 75])
                out.append({"block": block, "freq": freq, "ratio": f"loop {base} / stacked newton_db",
                            "median": float(med), "q1": float(q1), "q3": float(q3), "pairs": pairs})
    return out


def bench_roots(n: int, block: int, repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    qs, lam = [], np.logspace(0, -4, block)
    for _ in range(n):  # Shampoo-like factors: decaying spectrum, condition number 1e4
        qs.append(np.linalg.qr(rng.standard_normal((block, block)))[0])
    a64 = np.stack([(q * lam) @ q.T for q in qs])
    top = lam >= 1e-2  # the top two decades: what 10 fixed Newton-DB steps resolve

    def band_err(x):  # max relative error of diag(Q^T X Q) vs lam^{-1/4} on the top two decades
        errs = [np.abs(np.diag(q.T @ xi @ q)[top] - lam[top] ** -0.25) / lam[top] ** -0.25
                for q, xi in zip(qs, x)]
        return float(np.max(errs))

    a = jnp.asarray(a64, jnp.float32)
    rows = []
    base = None
    for label, method, kw in [("eigh", Eigh(), {}), ("newton_db", NewtonDB(), {}),
                              ("newton_db (one call)", NewtonDB(), {"chunk_size": None}),
                              ("newton_db+bf16", NewtonDB(matmul_dtype=jnp.bfloat16), {}),
                              ("newton_db+fro", NewtonDB(scaling=FrobeniusScaling()), {}),
                              ("coupled_newton", CoupledNewton(), {}), ("chebyshev", Chebyshev(degree=40), {})]:
        # .value inside the jit: the solution's residual is not needed here, so XLA drops it
        f = jax.jit(lambda m, method=method, kw=kw: matrix_inverse_root(m, 4, method=method, **kw).value)
        out = np.asarray(f(a), np.float64)
        err = band_err(out)
        t = time_fn(f, a, repeats=repeats)
        base = base or t["median_s"]
        used = _resolve_chunk_size(kw.get("chunk_size", "auto"), method, block, jnp.float32)
        rows.append({"method": label, "chunk": used or "none", "N": n, "B": block, "ms": 1e3 * t["median_s"],
                     "vs_eigh": base / t["median_s"], "top2dec_rel_err": err,
                     "compile_s": t["compile_s"]})
    return rows


def bench_shampoo(size: str, repeats: int, pairs: int) -> tuple[list[dict], list[dict]] | None:
    """DASH (Newton-DB, default settings) beside JAX Distributed Shampoo at the first block size of ``size``.

    The step, compile and state-bytes measurement and the paired ratio (both steps timed alternately, median of
    per-pair ratios) are ``benchmarks/dash_vs_shampoo.py``'s, on this script's tree. ``None`` when
    ``precondition-opt`` is not installed.
    """
    import dash_vs_shampoo  # here, not at import: it imports this module's transformer_params

    if dash_vs_shampoo.DS is None:
        return None
    d, layers, vocab, blocks = SIZES[size]
    rows, paired = [], []
    for block in blocks[:1]:  # 128 at the quick and small sizes (the comparison)
        r, p = dash_vs_shampoo.bench_step(d, layers, vocab, block, repeats=repeats, pairs=pairs)
        rows += r
        paired += [dict(q, block=block) for q in p]
    return rows, paired


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", choices=list(SIZES), default=None)
    parser.add_argument("--shampoo-only", action="store_true",
                        help="only DASH vs JAX Distributed Shampoo (step, compile, state bytes, paired ratio)")
    args = parser.parse_args(argv)
    size = args.size or ("quick" if args.quick else "small")
    repeats = 6 if args.quick else 9
    shampoo = bench_shampoo(size, repeats=5 if args.quick else 7, pairs=8 if args.quick else 12)
    if shampoo is None:
        print("JAX Distributed Shampoo (precondition-opt) is not installed: its rows are left out")
    else:
        print_table(shampoo[0], title=f"DASH vs JAX Distributed Shampoo, tree ({size}), {jax.default_backend()}")
        print_table(shampoo[1], title="paired: both steps timed alternately, median of per-pair ratios "
                                      "(>1: DASH faster)")
    if args.shampoo_only:
        path = write_results(rows=shampoo[0] if shampoo else [], part=f"shampoo_{size}", dtype="float32",
                             extra={"paired_ratios": shampoo[1] if shampoo else [], "size": size})
        print(f"wrote {path}")
        return
    step_rows, runners = bench_step(size, repeats)
    paired = paired_ratios(runners, size, pairs=12 if args.quick else 16)
    print_table(step_rows, ["optimizer", "root", "block", "freq", "ms_per_step", "min_ms", "iqr_ms", "compile_s",
                            "note"],
                title=f"optimizer step, transformer-shaped tree ({size}), {jax.default_backend()}")
    n, b = (16, 128) if size == "quick" else (32, 256) if size == "small" else (256, 1024)
    root_rows = bench_roots(n, b, repeats)
    print_table(root_rows, title="inverse 4th roots of one (N, B, B) stack, float32")

    # ratios, on the minimum over repeats (the least load-disturbed estimate on a shared machine)
    def ms(opt, root, block, freq):
        for r in step_rows:
            if (r["optimizer"], r["root"], r["block"], r["freq"]) == (opt, root, block, freq):
                return r["min_ms"]
        return float("nan")

    ratios = []
    adam = ms("optax.adam", "-", "-", "-")
    for block in SIZES[size][3]:
        for freq in (1, 10):
            loop_eigh = ms("per-block loop", "eigh", block, freq)
            for m in ("newton_db", "coupled_newton", "chebyshev", "eigh"):
                st = ms("icmlx DASH (stacked)", m, block, freq)
                row = {"block": block, "freq": freq, "stacked_root": m,
                       "loop_eigh/stacked": loop_eigh / st, "stacked/adam": st / adam}
                if m in ("newton_db", "eigh"):
                    row["loop_same/stacked"] = ms("per-block loop", m, block, freq) / st
                ratios.append(row)
            st = ms("icmlx DASH (stacked, one call)", "newton_db", block, freq)
            ratios.append({"block": block, "freq": freq, "stacked_root": "newton_db, one call",
                           "loop_eigh/stacked": loop_eigh / st, "stacked/adam": st / adam,
                           "loop_same/stacked": ms("per-block loop", "newton_db", block, freq) / st})
    print_table(ratios, title="ratios of min ms/step (>1 means the stacked DASH step is faster)")
    print_table(paired, title="paired ratios: baseline and stacked timed alternately, median of per-pair ratios")
    path = write_results(rows=step_rows + root_rows, part="step", dtype="float32",
                         extra={"ratios": ratios, "paired_ratios": paired, "size": size,
                                "distributed_shampoo": None if shampoo is None else
                                {"rows": shampoo[0], "paired_ratios": shampoo[1]}})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
