"""Quality at the defaults: DASH, SOAP, JAX Distributed Shampoo and Adam, each at its best learning rate.

Problems:

* **Matrix regressions** ``min_W mean((A W B - C)^2) / 2`` with square ``A``, ``B`` of condition number
  ``sqrt(kappa)`` each (singular values geometric, random orthogonal vectors), so that the Hessian
  ``(B B^T) x (A^T A)`` has condition number ``kappa^2``, and ``C`` standard normal (every singular direction
  carries loss); the reported loss is the *excess* over the float64 optimum (0 up to rounding: ``A`` and ``B``
  are invertible). ``kappa`` in {10, 1e2, 1e3}; shapes with ragged edges for the block size: ``W`` 64 x 48 at
  block 32 and 96 x 64 at block 64 (``--full`` adds 160 x 100 at block 128).
* **MLP on scikit-learn's digits** (64-64-10, tanh, full-batch cross-entropy on 1,347 training images for half
  the regressions' steps; test accuracy on the other 450), block 32; skipped when scikit-learn is not installed.
* **Small CNN on the digits** (3x3 convolutions 1 -> 8 -> 16 channels, the second with stride 2, tanh, then dense
  256 -> 10; full-batch cross-entropy on a 512-image subsample of the training split for half the regressions'
  steps), block 32, on its own coarser learning-rate grid ``CNN_LRS``.
* **Character-level LM** on the bytes of the standard library's ``argparse.py`` (text from outside this project,
  present wherever Python is): 16 characters of context embedded in 16 dims each -> 128 tanh -> 128 logits,
  minibatches of 128 windows for 150 steps, block 128; the final loss is on 2,048 held-out windows. It stands in
  for the transformer of ``examples/dash_lm.py`` at a size that fits the suite; grid ``LM_LRS``.

Every run decays its learning rate linearly from the peak (the grid value) to 0, so the final loss measures
convergence rather than the noise floor of a constant step.

Optimizers, each at the learning rate of one shared grid that gives it the lowest mean final loss:

* ``icmlx DASH (defaults)``: ``dash(lr, block_size=B)``;
* ``icmlx SOAP``: ``soap(lr, B, weight_decay=0)`` (its other settings the reference's);
* ``JAX Distributed Shampoo``: its recommended settings, ``beta1=0.9, beta2=0.999``, roots every 10 steps
  (``preconditioning_compute_steps=10``), ``graft_type=RMSPROP_NORMALIZED``, ``start_preconditioning_step=1``,
  its default ``matrix_epsilon=1e-6`` (relative);
* ``optax.adam``;
* with ``--variants``, DASH with its previous defaults (``b2=0.999``, ``graft_bias_correction=True``) and the
  defaults with one setting changed (``b1=0.9`` without momentum, ``grafting="adam"``, ``"adam_normalized"`` with
  ``b1=0.9`` and no momentum, ``graft_bias_correction=True``, ``b2=0.999``, ``b2=0.95``, ``factor_decay=0.999``),
  SOAP with ``b1=0.9`` and Adam at SOAP's ``b1 = b2 = 0.95``.

Each run is one compiled ``lax.scan`` (the learning rate and the problem data are arguments, so a shape compiles
once per optimizer). Reported per problem and optimizer (with the command that wrote the row and its number of
seeds): the best learning rate, the mean final loss over seeds
with its min and max, the mean number of steps to reach ``1e-3`` (regressions) or ``1e-2`` (MLP, CNN) times the
starting loss (``null`` when a seed never reaches it; the LM's is its minibatch loss reaching half the
first one), and the ratio of DASH's mean final loss to Distributed Shampoo's.

Usage::

    python benchmarks/optim_suite.py --quick            # 2 seeds, 200 steps -> results/optim_suite.json
    python benchmarks/optim_suite.py --quick --seeds 3 --rows regression mlp    # 3 seeds at the quick steps
    python benchmarks/optim_suite.py --quick --variants             # and DASH's previous and one-change settings
    python benchmarks/optim_suite.py --full --variants                   # 3 seeds, 400 steps, block 128 too
    python benchmarks/optim_suite.py --quick --rows cnn lm   # only these rows, merged into results/optim_suite.json
    python benchmarks/optim_suite.py --quick --variants --rows lm --optimizers Shampoo "DASH b"   # and optimizers

A partial run (``--rows`` or ``--optimizers``) replaces the file's rows of the same problem and optimizer and
keeps the others (`merge_results`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import RESULTS_DIR, environment  # noqa: E402
from dash_vs_shampoo import load_distributed_shampoo  # noqa: E402
from icmlx.optim import dash, soap  # noqa: E402

DS = load_distributed_shampoo(required=False)
#: peak learning rates; every run decays linearly from the peak to 0 over its steps
LRS = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 3.0, 10.0)


def _ds(lr, block):
    return DS.distributed_shampoo(lr, block, beta1=0.9, beta2=0.999, preconditioning_compute_steps=10,
                                  start_preconditioning_step=1, graft_type=DS.GraftingType.RMSPROP_NORMALIZED,
                                  generate_training_metrics=False)


#: DASH's settings before the defaults changed (the grafting's second moment bias-corrected, its EMA rate 0.999)
PREVIOUS_DEFAULTS = dict(b2=0.999, graft_bias_correction=True)


def optimizers(variants: bool) -> dict:
    out = {
        "icmlx DASH (defaults)": lambda lr, b: dash(lr, block_size=b),
        "icmlx SOAP": lambda lr, b: soap(lr, b, weight_decay=0.0),
    }
    if DS is not None:
        out["JAX Distributed Shampoo"] = _ds
    out["optax.adam"] = lambda lr, b: optax.adam(lr)
    if variants:
        # the previous defaults, then the defaults with one setting changed
        for name, kw in {
            "DASH previous defaults (b2=0.999, graft_bias_correction=True)": PREVIOUS_DEFAULTS,
            "DASH b1=0.9, momentum=0": dict(b1=0.9, momentum=0.0),
            "DASH grafting=adam": dict(grafting="adam"),
            "DASH grafting=adam_normalized, b1=0.9, momentum=0": dict(grafting="adam_normalized", b1=0.9,
                                                                      momentum=0.0),
            "DASH graft_bias_correction=True": dict(graft_bias_correction=True),
            "DASH b2=0.999": dict(b2=0.999),
            "DASH b2=0.95": dict(b2=0.95),
            "DASH factor_decay=0.999": dict(factor_decay=0.999),
        }.items():
            out[name] = lambda lr, b, kw=kw: dash(lr, block_size=b, **kw)
        # SOAP with Adam's first-moment rate below the reference's b1 = b2 = 0.95
        out["SOAP b1=0.9"] = lambda lr, b: soap(lr, b, b1=0.9, weight_decay=0.0)
        # Adam at SOAP's moment rates, in the parameter basis
        out["optax.adam b1=b2=0.95"] = lambda lr, b: optax.adam(lr, b1=0.95, b2=0.95)
    return out


# ------------------------------------------------------------------------------------------------- problems


def _orth(rng, n):
    q, r = np.linalg.qr(rng.normal(size=(n, n)))
    return q * np.sign(np.diag(r))


def regression(shape, kappa, seed):
    """(A, B, C) in float32 and the float64 optimum of mean((A W B - C)^2) / 2."""
    rng = np.random.default_rng(seed)
    m, n = shape
    root = np.sqrt(kappa)  # cond(A) = cond(B) = sqrt(kappa): the Hessian (B B^T) x (A^T A) has cond kappa^2
    sa, sb = np.geomspace(1.0, 1.0 / root, m), np.geomspace(1.0, 1.0 / root, n)
    A = _orth(rng, m) @ np.diag(sa) @ _orth(rng, m)
    B = _orth(rng, n) @ np.diag(sb) @ _orth(rng, n)
    C = rng.normal(size=(m, n))  # every singular direction carries loss: the small ones are the hard ones
    w_opt = np.linalg.solve(A, C) @ np.linalg.inv(B)  # square, invertible: the optimum interpolates C
    opt = 0.5 * np.mean((A @ w_opt @ B - C) ** 2)
    return tuple(jnp.asarray(x, jnp.float32) for x in (A, B, C)), float(opt)


def regression_runner(make, block, shape, steps, dtype=jnp.float32):
    """``run(peak_lr, A, B, C)``: the loss before each step and after the last, one compiled scan from ``W = 0`` in
    ``dtype``."""
    def loss(w, A, B, C):
        return 0.5 * jnp.mean((A @ w @ B - C) ** 2)

    @jax.jit
    def run(lr, A, B, C):
        opt = make(optax.linear_schedule(lr, 0.0, steps), block)
        w = jnp.zeros(shape, dtype)
        s = opt.init(w)

        def body(carry, _):
            w, s = carry
            val, g = jax.value_and_grad(loss)(w, A, B, C)
            u, s = opt.update(g, s, w)
            return (optax.apply_updates(w, u), s), val

        (w, _), hist = jax.lax.scan(body, (w, s), None, length=steps)
        return jnp.append(hist, loss(w, A, B, C))

    return run


def digits_data(seed):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=450, random_state=seed, stratify=y)
    return tuple(jnp.asarray(a, jnp.float32) for a in (xtr, xte)) + (jnp.asarray(ytr), jnp.asarray(yte))


def _train_full_batch(opt, loss, forward, p, data, steps):
    """``steps`` full-batch steps of ``opt`` from ``p`` in one scan: the loss history (with the final loss) and the
    test accuracy."""
    xtr, ytr, xte, yte = data
    s = opt.init(p)

    def body(carry, _):
        p, s = carry
        val, g = jax.value_and_grad(loss)(p, xtr, ytr)
        u, s = opt.update(g, s, p)
        return (optax.apply_updates(p, u), s), val

    (p, _), hist = jax.lax.scan(body, (p, s), None, length=steps)
    acc = jnp.mean(jnp.argmax(forward(p, xte), -1) == yte)
    return jnp.append(hist, loss(p, xtr, ytr)), acc


def mlp_runner(make, block, steps):
    def forward(p, x):
        return jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    def loss(p, x, y):
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(forward(p, x), y))

    @jax.jit
    def run(lr, key, xtr, ytr, xte, yte):
        lr = optax.linear_schedule(lr, 0.0, steps)
        k1, k2 = jax.random.split(key)
        p = {"w1": jax.random.normal(k1, (64, 64)) / 8.0, "b1": jnp.zeros(64),
             "w2": jax.random.normal(k2, (64, 10)) / 8.0, "b2": jnp.zeros(10)}
        return _train_full_batch(make(lr, block), loss, forward, p, (xtr, ytr, xte, yte), steps)

    return run


#: CNN: filters of its two convolutions and the training subsample (a fixed, seed-dependent draw)
CNN_FILTERS, CNN_TRAIN = (8, 16), 512


def cnn_runner(make, block, steps):
    """Two 3x3 convolutions (1 -> 8 -> 16 channels, the second with stride 2, tanh) and a dense 256 -> 10
    layer on the 8 x 8 digits, full-batch cross-entropy; returns the loss history and the test accuracy."""
    dn = ("NHWC", "HWIO", "NHWC")
    f1, f2 = CNN_FILTERS

    def forward(p, x):
        h = x.reshape(-1, 8, 8, 1)
        h = jnp.tanh(jax.lax.conv_general_dilated(h, p["k1"], (1, 1), "SAME", dimension_numbers=dn) + p["c1"])
        h = jnp.tanh(jax.lax.conv_general_dilated(h, p["k2"], (2, 2), "SAME", dimension_numbers=dn) + p["c2"])
        return h.reshape(h.shape[0], -1) @ p["w"] + p["b"]

    def loss(p, x, y):
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(forward(p, x), y))

    @jax.jit
    def run(lr, key, xtr, ytr, xte, yte):
        lr = optax.linear_schedule(lr, 0.0, steps)
        k1, k2, k3 = jax.random.split(key, 3)
        p = {"k1": jax.random.normal(k1, (3, 3, 1, f1)) / 3.0, "c1": jnp.zeros(f1),
             "k2": jax.random.normal(k2, (3, 3, f1, f2)) / jnp.sqrt(9.0 * f1), "c2": jnp.zeros(f2),
             "w": jax.random.normal(k3, (16 * f2, 10)) / jnp.sqrt(16.0 * f2), "b": jnp.zeros(10)}
        return _train_full_batch(make(lr, block), loss, forward, p, (xtr, ytr, xte, yte), steps)

    return run


#: the char-LM's text: a file of the Python standard library (written by CPython's authors, on every machine)
LM_SOURCE = "argparse.py"
LM_CONTEXT, LM_EMBED, LM_HIDDEN, LM_BATCH, LM_STEPS = 16, 16, 128, 128, 150
#: the CNN's and the char-LM's learning-rate grids (coarser than ``LRS``: their steps cost more)
CNN_LRS = (1e-3, 1e-2, 1e-1, 1.0)
LM_LRS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


def lm_data(n_chars: int = 60_000):
    """Bytes of ``LM_SOURCE`` (non-ASCII mapped to 0) split 90/10 into training and validation text."""
    import sysconfig

    raw = (Path(sysconfig.get_paths()["stdlib"]) / LM_SOURCE).read_bytes()[:n_chars]
    ids = np.frombuffer(raw, np.uint8).astype(np.int32)
    ids = np.where(ids < 128, ids, 0)
    cut = int(0.9 * ids.size)
    return jnp.asarray(ids[:cut]), jnp.asarray(ids[cut:])


def lm_runner(make, block, steps):
    """Char-level LM: 16 previous characters, each embedded in 16 dims, concatenated (256) -> 128 tanh -> 128
    logits; minibatches of 128 random windows (the seed fixes them and the initialisation); the history is the
    minibatch loss and its last entry the loss on 2,048 fixed windows of the held-out text (``nan`` after a
    divergence)."""
    def forward(p, ctx):
        e = p["emb"][ctx].reshape(ctx.shape[0], -1)
        return jnp.tanh(e @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    def windows(text, starts):
        idx = starts[:, None] + jnp.arange(LM_CONTEXT + 1)
        w = text[idx]
        return w[:, :-1], w[:, -1]

    def loss(p, ctx, y):
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(forward(p, ctx), y))

    @jax.jit
    def run(lr, key, train, valid):
        lr = optax.linear_schedule(lr, 0.0, steps)
        k1, k2, k3, kb = jax.random.split(key, 4)
        d_in = LM_CONTEXT * LM_EMBED
        p = {"emb": jax.random.normal(k1, (128, LM_EMBED)),
             "w1": jax.random.normal(k2, (d_in, LM_HIDDEN)) / jnp.sqrt(float(d_in)), "b1": jnp.zeros(LM_HIDDEN),
             "w2": jax.random.normal(k3, (LM_HIDDEN, 128)) / jnp.sqrt(float(LM_HIDDEN)), "b2": jnp.zeros(128)}
        starts = jax.random.randint(kb, (steps, LM_BATCH), 0, train.shape[0] - LM_CONTEXT - 1)
        opt = make(lr, block)
        s = opt.init(p)

        def body(carry, st):
            p, s = carry
            val, g = jax.value_and_grad(loss)(p, *windows(train, st))
            u, s = opt.update(g, s, p)
            return (optax.apply_updates(p, u), s), val

        (p, _), hist = jax.lax.scan(body, (p, s), starts)
        vstarts = jnp.linspace(0, valid.shape[0] - LM_CONTEXT - 2, 2048).astype(jnp.int32)
        return jnp.append(hist, loss(p, *windows(valid, vstarts)))

    return run


# --------------------------------------------------------------------------------------------------- report


def _summarize(per_lr: dict, target_frac: float) -> dict:
    """per_lr: lr -> list over seeds of (loss history incl. final, extra metric or None)."""
    best_lr, best = None, np.inf
    for lr, runs in per_lr.items():
        finals = [h[-1] for h, _ in runs]
        mean = float(np.mean(finals)) if all(np.isfinite(finals)) else np.inf
        if mean < best:
            best_lr, best = lr, mean
    if best_lr is None:
        return {"best_lr": None, "final_mean": None, "diverged_everywhere": True}
    runs = per_lr[best_lr]
    finals = np.array([h[-1] for h, _ in runs])
    to_target = []
    for h, _ in runs:
        hit = np.nonzero(h <= target_frac * h[0])[0]
        to_target.append(int(hit[0]) if hit.size else None)
    row = {"best_lr": best_lr, "final_mean": float(finals.mean()), "final_min": float(finals.min()),
           "final_max": float(finals.max()),
           "steps_to_target_mean": (float(np.mean(to_target)) if all(t is not None for t in to_target) else None)}
    extra = [e for _, e in runs if e is not None]
    if extra:
        row["test_accuracy_mean"] = float(np.mean(extra))
    return row


def _over(num, den):
    """``num / den``, or ``None`` where the denominator is 0 (a cross-entropy that reached float32's 0)."""
    return num / den if den else None


def _ratios(rows: list) -> list:
    ratios = []
    for prob in dict.fromkeys(r["problem"] for r in rows):
        by = {r["optimizer"]: r for r in rows if r["problem"] == prob}
        d, s = by.get("icmlx DASH (defaults)"), by.get("JAX Distributed Shampoo")
        if d and s and d.get("final_mean") is not None and s.get("final_mean") is not None:
            adam = by.get("optax.adam", {}).get("final_mean")
            soap_ = by.get("icmlx SOAP", {}).get("final_mean")
            ratios.append({"problem": prob, "dash_over_shampoo": _over(d["final_mean"], s["final_mean"]),
                           "dash_max_over_shampoo_min": _over(d["final_max"], s["final_min"]),
                           "soap_over_shampoo": _over(soap_, s["final_mean"]) if soap_ is not None else None,
                           "dash_over_adam": _over(d["final_mean"], adam) if adam is not None else None,
                           "dash_minus_shampoo": d["final_mean"] - s["final_mean"]})
    return ratios


def _tune(run_one, lrs, seeds_data, target_frac):
    """Every (learning rate, seed) run of one optimizer on one problem, summarised at the best learning rate."""
    per_lr = {}
    for lr in lrs:
        per_lr[lr] = []
        for d in seeds_data:
            h, extra = run_one(jnp.float32(lr), d)
            h = np.asarray(h, np.float64)
            per_lr[lr].append((np.where(np.isfinite(h), h, np.inf), extra))
    return _summarize(per_lr, target_frac)


ROWS = ("regression", "mlp", "cnn", "lm")
#: problem-name prefixes in the order a full run writes them (``"lm"`` rows are named ``"char-lm ..."``)
_ROW_ORDER = ("regression", "mlp", "cnn", "char-lm")


def merge_results(previous: dict, rows: list, run_info: dict, row_names, complete: bool) -> dict:
    """The result record after a run: a complete run replaces the file; a partial
    run (a subset of ``--rows`` or of ``--optimizers``) replaces the file's rows of the same (problem,
    optimizer), keeps the others, lists them in a full run's problem order and records its ``run_info`` under
    ``row_runs[name]`` for each name of ``row_names``; ``ratios`` are recomputed from the merged rows."""
    if complete:
        return {"benchmark": "optim_suite", **run_info, "learning_rates": list(LRS), "rows": rows,
                "ratios": _ratios(rows)}
    new = {(r["problem"], r["optimizer"]) for r in rows}
    record = dict(previous)
    kept = [r for r in previous.get("rows", []) if (r["problem"], r["optimizer"]) not in new]

    def rank(r):
        return next((i for i, k in enumerate(_ROW_ORDER) if r["problem"].startswith(k)), len(_ROW_ORDER))

    record["rows"] = sorted(kept + rows, key=rank)  # stable: within a problem, kept rows first, then new ones
    record["ratios"] = _ratios(record["rows"])
    record["row_runs"] = {**previous.get("row_runs", {}), **{name: run_info for name in row_names}}
    return record


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="2 seeds, 200 steps (default)")
    size.add_argument("--full", action="store_true", help="3 seeds, 400 steps, block 128 too")
    ap.add_argument("--seeds", type=int, metavar="N",
                    help="seeds 0..N-1 (default 2 with --quick, 3 with --full); the steps stay those of the size")
    ap.add_argument("--variants", action="store_true",
                    help="also DASH's previous and one-change settings, SOAP b1=0.9, Adam b1=b2=0.95")
    ap.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS),
                    help="problems to run (default all); a subset replaces those rows of --out and keeps the rest")
    ap.add_argument("--no-soap", action="store_true", help="leave SOAP out")
    ap.add_argument("--optimizers", nargs="+", metavar="SUBSTRING",
                    help="run only the optimizers whose name contains one of these substrings (with a subset of "
                         "--rows, the file's rows of the other optimizers are kept)")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "optim_suite.json")
    args = ap.parse_args(argv)
    seeds, steps = ((0, 1, 2), 400) if args.full else ((0, 1), 200)
    if args.seeds is not None:
        if args.seeds < 1:
            ap.error(f"--seeds must be at least 1, got {args.seeds}")
        seeds = tuple(range(args.seeds))
    cases = [((64, 48), 32), ((96, 64), 64)] + ([((160, 100), 128)] if args.full else [])
    kappas = (10.0, 1e2, 1e3)
    opts = optimizers(args.variants)
    if args.no_soap:
        opts.pop("icmlx SOAP")
    if args.optimizers:
        opts = {k: v for k, v in opts.items() if any(sub in k for sub in args.optimizers)}
    command = "python benchmarks/optim_suite.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    t_start = time.perf_counter()
    rows = []

    def add(problem, block, name, summary, **extra):
        rows.append({"problem": problem, "block": block, "optimizer": name, "seeds": len(seeds), **extra, **summary,
                     "command": command})
        print(rows[-1], flush=True)

    with jax.numpy_dtype_promotion("standard"):  # optax and Distributed Shampoo mix int32 and float
        for shape, block in cases if "regression" in args.rows else ():
            data = {k: [regression(shape, k, s) for s in seeds] for k in kappas}
            for name, make in opts.items():
                run = regression_runner(make, block, shape, steps)
                for kappa in kappas:
                    add(f"regression {shape[0]}x{shape[1]} kappa={kappa:g}", block, name,
                        _tune(lambda lr, d, run=run: (np.asarray(run(lr, *d[0]), np.float64) - d[1], None),
                              LRS, data[kappa], 1e-3))
        try:
            digits = [digits_data(s) for s in seeds] if {"mlp", "cnn"} & set(args.rows) else None
        except ImportError:
            digits = None

        def classify(run, key_seeds, data):
            def one(lr, d):
                s, (xtr, xte, ytr, yte) = d
                h, acc = run(lr, jax.random.key(s), xtr, ytr, xte, yte)
                return h, float(acc)
            return one, list(zip(key_seeds, data))

        if digits is not None and "mlp" in args.rows:
            for name, make in opts.items():
                one, data = classify(mlp_runner(make, 32, steps // 2), seeds, digits)
                add("mlp digits 64-64-10", 32, name, _tune(one, LRS, data, 1e-2))
        if digits is not None and "cnn" in args.rows:
            sub = []
            for s, (xtr, xte, ytr, yte) in zip(seeds, digits):
                idx = np.random.default_rng(s).choice(xtr.shape[0], CNN_TRAIN, replace=False)
                sub.append((xtr[idx], xte, ytr[idx], yte))
            for name, make in opts.items():
                one, data = classify(cnn_runner(make, 32, steps // 2), seeds, sub)
                add(f"cnn digits conv{CNN_FILTERS[0]}-conv{CNN_FILTERS[1]}-10, {CNN_TRAIN} images", 32, name,
                    _tune(one, CNN_LRS, data, 1e-2), steps=steps // 2, learning_rates=list(CNN_LRS))
        if "lm" in args.rows:
            train, valid = lm_data()
            for name, make in opts.items():
                run = lm_runner(make, 128, LM_STEPS)
                add(f"char-lm {LM_SOURCE} (validation loss)", 128, name,
                    _tune(lambda lr, s, run=run: (run(lr, jax.random.key(s), train, valid), None), LM_LRS, seeds,
                          0.5), steps=LM_STEPS, learning_rates=list(LM_LRS))
    total_s = time.perf_counter() - t_start
    run_info = {"command": command, "seeds": list(seeds), "steps": steps, "environment": environment("float32"),
                "total_s": total_s}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        previous = json.loads(args.out.read_text())
    except (OSError, ValueError):
        previous = {"benchmark": "optim_suite"}
    record = merge_results(previous, rows, run_info, args.rows,
                           complete=set(args.rows) == set(ROWS) and not args.optimizers)
    args.out.write_text(json.dumps(record, indent=2))
    for r in _ratios(rows):
        print(r)
    print(f"wrote {args.out} ({total_s:.0f} s)")
    return record


if __name__ == "__main__":
    main()
