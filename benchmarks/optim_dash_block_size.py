"""DASH's block size on this backend: the cost of one inverse-root refresh and of a plain step against B.

Backs the backend-dependent default of ``dash(block_size=None)``: for a fixed parameter count, a refresh costs
about linearly more as the block side B grows. On a CPU that is one long serial computation, so the default there
is small; on a GPU a batched solve of big blocks fills the device.

Times ``scale_by_dash(block_size=B).update`` on one kernel (default (2048, 128)), with a refresh every step
(``precondition_frequency=1``) and with no refresh (``precondition_frequency=10**6``). It reports the first call
(compile, or a load from the persistent cache) apart from the steady-state median, and the ratio to the backend's
default block size. Writes
``benchmarks/results/optim_dash_block_size.json``.

    python benchmarks/optim_dash_block_size.py            # B in 64..1024, kernel 2048x128
    python benchmarks/optim_dash_block_size.py --quick    # B in 128, 256, 1024
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from _harness import print_table, time_fn, write_results
from icmlx.optim import scale_by_dash
from icmlx.optim._dash import _default_block_size  # the benchmark reports the default it backs


def _time(block_size: int, frequency: int, shape: tuple[int, int], repeats: int) -> dict:
    tx = scale_by_dash(block_size=block_size, precondition_frequency=frequency)
    params = jnp.ones(shape)
    grads = jax.random.normal(jax.random.key(0), shape)
    state = tx.init(params)
    update = jax.jit(tx.update)
    # One step first (trace + compile + run, timed apart) so the timed calls run past the first refresh.
    t0 = time.perf_counter()
    updates, state = jax.block_until_ready(update(grads, state, params))
    first = time.perf_counter() - t0
    assert bool(jnp.all(jnp.isfinite(updates))), f"non-finite update at block_size={block_size}"
    out = time_fn(lambda: update(grads, state, params)[0], repeats=repeats)
    out["compile_s"] = first
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shape", default="2048x128")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split("x"))
    blocks = [128, 256, 1024] if args.quick else [64, 128, 256, 512, 1024]
    default_block = _default_block_size()  # what block_size=None resolves to on this backend
    rows = []
    for b in blocks:
        refresh = _time(b, 1, shape, args.repeats)
        plain = _time(b, 10**6, shape, args.repeats)
        rows.append({"block_size": b, "refresh_step_ms": 1e3 * refresh["median_s"],
                     "refresh_iqr_ms": 1e3 * refresh["iqr_s"], "plain_step_ms": 1e3 * plain["median_s"],
                     "compile_s": refresh["compile_s"]})
        print(rows[-1], flush=True)
    base = next((r["refresh_step_ms"] for r in rows if r["block_size"] == default_block), np.nan)
    for r in rows:
        r["refresh_vs_default"] = r["refresh_step_ms"] / base
    print_table(rows, title=f"scale_by_dash on a {shape} kernel, backend {jax.default_backend()} "
                            f"(default block {default_block})")
    path = write_results("optim_dash_block_size", rows,
                         extra={"shape": list(shape), "default_block_size": default_block, "quick": args.quick})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
