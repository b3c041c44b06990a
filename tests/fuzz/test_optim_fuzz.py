"""Bad-input cases for every public entry point of ``icmlx.optim`` (issue #22): right answer or clear error.

References are independent of the code under test: SciPy/NumPy float64 matrix functions, ``optax.adam``, closed
forms of the schedules and exponents, and a NumPy run of the deterministic misspecification sweep.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from _harness import Case, assert_good, params
from icmlx import optim as O

CASES: list[Case] = []


def status_of(record):
    """``(successful, name: message)`` of a record with an ``icmlx.RESULTS`` ``result`` (batched: all succeed).

    The shared harness's ``status_of`` looks the item up on ``type(result)`` (equinox's ``EnumerationItem``),
    which has no ``_name_to_item``; the enumeration is ``result._enumeration``.
    """
    import icmlx

    result = record.result
    codes = np.ravel(np.asarray(result._value))
    ok = int(icmlx.RESULTS.successful._value)
    if np.all(codes == ok):
        return True, ""
    enum = result._enumeration
    name = {int(item._value): n for n, item in enum._name_to_item.items()}[int(codes[codes != ok][0])]
    item = enum._name_to_item[name]
    return False, f"{name}: {enum[item]}"
_RNG = np.random.default_rng(22)


def add(name, run, check=None, words=(), status=None, slow=False, timeout=60.0):
    CASES.append(Case(name=f"optim.{name}", run=run, check=check, words=tuple(words), status=status,
                      slow=slow, timeout=timeout))


def _quiet(fn):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return run


def _spd(n, kappa=100.0, seed=0):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (q * np.geomspace(1.0, 1.0 / kappa, n)) @ q.T


def _root_ref(a, p):
    w, q = np.linalg.eigh(0.5 * (a + a.T))
    return (q * w ** (-1.0 / p)) @ q.T


def _close(x, ref, rtol):
    x = np.asarray(x, np.float64)
    return x.shape == ref.shape and bool(np.all(np.isfinite(x))) and (
        np.max(np.abs(x - ref)) <= rtol * max(np.max(np.abs(ref)), 1e-300))


A8 = _spd(8)
A8_32 = A8.astype(np.float32)
ROOT_WORDS = ("accuracy", "inaccurate", "max_steps", "diverged", "psd", "positive", "indefinite", "nonfinite")


def _root_check(a64, p, rtol):
    """Right when ``value`` matches ``(A + r I)^{-1/p}`` (float64 eigh) for the documented ridge ``r`` it reports."""

    def check(sol):
        ridge = np.ravel(np.asarray(sol.stats["ridge"], np.float64))
        lam = np.max(np.linalg.eigvalsh(a64.reshape(-1, *a64.shape[-2:])), axis=-1)
        if not np.all((ridge >= 0) & (ridge <= 2.5e-2 * np.maximum(lam, 1e-300) + 1e-6)):
            return False
        val = np.asarray(sol.value, np.float64).reshape(-1, *a64.shape[-2:])
        mats = a64.reshape(-1, *a64.shape[-2:])
        return all(_close(v, _root_ref(m + r * np.eye(m.shape[-1]), p), rtol) for v, m, r in zip(val, mats, ridge))

    return check


METHODS = {"newton_db": (2, 4), "coupled_newton": (1, 2, 3, 4), "chebyshev": (1, 2, 3, 4), "eigh": (1, 2, 4)}


def _mir(a, p, method, mode="eager", **kw):
    f = lambda x: O.matrix_inverse_root(x, p, method=method, throw=False, **kw)  # noqa: E731
    if mode == "jit":
        return lambda: jax.jit(f)(a)
    return lambda: f(a)


# ------------------------------------------------------------------------- matrix_inverse_root: accuracy, status
for m, ps in METHODS.items():
    for p in ps:
        default = p == 2 and m in ("newton_db", "eigh")
        add(f"matrix_inverse_root.accuracy.{m}.p{p}.eager", _mir(A8_32, p, m), _root_check(A8, p, 2e-3),
            ROOT_WORDS, status_of, slow=not default)
    add(f"matrix_inverse_root.accuracy.{m}.p2.jit", _mir(A8_32, 2, m, "jit"), _root_check(A8, 2, 2e-3),
        ROOT_WORDS, status_of, slow=True)
    for scale in (1e20, 1e-20, 1e30):
        add(f"matrix_inverse_root.scale{scale:g}.{m}.eager", _mir((A8 * scale).astype(np.float32), 2, m),
            _root_check(A8 * scale, 2, 2e-3), ROOT_WORDS, status_of, slow=scale != 1e30 or m != "eigh")
    # Ill-conditioned (kappa 1e8): the fixed-work methods cannot resolve the bottom of the spectrum.
    Aill = _spd(8, 1e8, seed=3)
    add(f"matrix_inverse_root.ill_conditioned.{m}.eager", _mir(Aill.astype(np.float32), 2, m),
        _root_check(Aill, 2, 2e-2), ROOT_WORDS, status_of, slow=m != "newton_db")
    # Rank-deficient PSD: only the ridge keeps it invertible.
    v = _RNG.normal(size=(6, 2))
    Asing = v @ v.T
    add(f"matrix_inverse_root.singular.{m}.eager", _mir(Asing.astype(np.float32), 2, m),
        _root_check(Asing, 2, 2e-2), ROOT_WORDS, status_of, slow=m != "eigh")
    # Not symmetric: documented to be symmetrised, so the root of the symmetric part is right.
    skew = np.triu(_RNG.normal(size=(8, 8)), 1) * 0.01
    add(f"matrix_inverse_root.nonsymmetric.{m}.eager", _mir((A8 + skew).astype(np.float32), 2, m),
        _root_check(A8 + 0.5 * (skew + skew.T), 2, 5e-3), ROOT_WORDS, status_of, slow=True)
    # Indefinite: no real inverse root; a non-success status or an error is right (Eigh documents heuristics).
    Aind = A8 - 0.5 * np.eye(8)
    for label, bad in (("indefinite", Aind), ("negative_diagonal", -A8)):
        if m == "eigh":
            def _shampoo_ref(sol, a=bad):
                w, q = np.linalg.eigh(a)
                r = float(np.ravel(np.asarray(sol.ridge))[0])
                return _close(sol.value, (q * (w - w.min() + r) ** -0.5) @ q.T, 1e-3)
            add(f"matrix_inverse_root.{label}.{m}.eager", _mir(bad.astype(np.float32), 2, m), _shampoo_ref,
                ROOT_WORDS, status_of, slow=label != "indefinite")
        else:
            add(f"matrix_inverse_root.{label}.{m}.eager", _mir(bad.astype(np.float32), 2, m), None,
                ROOT_WORDS, status_of, slow=True)
    add(f"matrix_inverse_root.nan.{m}.eager", _mir(np.where(np.eye(8) > 0, np.nan, A8_32), 2, m), None,
        ("nan", "non-finite"), status_of, slow=m != "eigh")
    add(f"matrix_inverse_root.nan.{m}.jit", _mir(np.where(np.eye(8) > 0, np.nan, A8_32), 2, m, "jit"), None,
        ("nan", "non-finite"), status_of, slow=True)
    add(f"matrix_inverse_root.inf.{m}.eager", _mir(np.full((4, 4), np.inf, np.float32), 2, m), None,
        ("inf", "non-finite"), status_of, slow=True)
    # All-zero: documented to give the root of the ridge, r^{-1/p} I.
    add(f"matrix_inverse_root.zero.{m}.eager", _mir(np.zeros((4, 4), np.float32), 2, m),
        _root_check(np.zeros((4, 4)), 2, 2e-3), ROOT_WORDS, status_of, slow=m != "eigh")

add("matrix_inverse_root.vmap.newton_db",
    lambda: jax.vmap(lambda a: O.matrix_inverse_root(a, 2, throw=False))(jnp.stack([A8_32, 2 * A8_32])),
    lambda sol: _root_check(np.stack([A8, 2 * A8]), 2, 2e-3)(sol), ROOT_WORDS, status_of, slow=True)
add("matrix_inverse_root.stack.eigh", _mir(np.stack([A8_32, 4 * A8_32]), 4, "eigh"),
    _root_check(np.stack([A8, 4 * A8]), 4, 1e-3), ROOT_WORDS, status_of, slow=True)


def _x64_mir(method, p):
    def run():
        with jax.enable_x64(True):
            sol = O.matrix_inverse_root(jnp.asarray(A8, jnp.float64), p, method=method, throw=False)
            return jax.tree.map(np.asarray, sol)
    return run


for m in ("coupled_newton", "eigh", "newton_db"):
    add(f"matrix_inverse_root.x64.{m}", _x64_mir(m, 2), _root_check(A8, 2, 1e-5), ROOT_WORDS, status_of,
        slow=True)

# shapes, dtypes, settings
for label, a in (("nonsquare", np.ones((3, 4), np.float32)), ("vector", np.ones(4, np.float32)),
                 ("scalar", np.float32(1.0))):
    add(f"matrix_inverse_root.{label}", _mir(a, 2, "eigh"), None, ("shape", "square", "(..., n, n)"), status_of)
for label, a in (("int", np.eye(3, dtype=np.int32)), ("bool", np.eye(3, dtype=bool)),
                 ("complex", np.eye(3, dtype=np.complex64))):
    add(f"matrix_inverse_root.dtype_{label}", _mir(a, 2, "newton_db"), None, ("dtype", "floating", "complex"),
        status_of)
for label, dt in (("bf16", jnp.bfloat16), ("f16", jnp.float16)):
    for m in ("newton_db", "eigh"):
        add(f"matrix_inverse_root.dtype_{label}.{m}", _mir(jnp.asarray(A8_32, dt), 2, m),
            lambda sol, dt=dt: sol.value.dtype == dt and _root_check(A8, 2, 5e-2)(sol),
            ("dtype", "bfloat16", "float16", "float32") + ROOT_WORDS, status_of, slow=m == "eigh" or label == "f16")
add("matrix_inverse_root.empty_0x0", _mir(np.zeros((0, 0), np.float32), 2, "newton_db"),
    lambda sol: sol.value.shape == (0, 0), ("empty", "n >= 1", "size"), status_of)
add("matrix_inverse_root.empty_batch", _mir(np.zeros((0, 3, 3), np.float32), 2, "newton_db"),
    lambda sol: sol.value.shape == (0, 3, 3), ("empty", "batch", "size"), status_of)
for p in (0, -2, 1.5, 2.0, True, float("nan")):
    add(f"matrix_inverse_root.p_{p}", _mir(A8_32, p, "coupled_newton"),
        (lambda sol: _root_check(A8, 2, 2e-3)(sol)) if p == 2.0 else None, ("p",), status_of,
        slow=p not in (0, 1.5))
add("matrix_inverse_root.p3.newton_db", _mir(A8_32, 3, "newton_db"), None, ("p",), status_of)
for eps in (float("nan"), -1.0, float("inf")):
    add(f"matrix_inverse_root.epsilon_{eps}", _mir(A8_32, 2, "eigh", epsilon=eps), None, ("epsilon",), status_of,
        slow=eps != -1.0)
for cs in (0, -3, 1.5, "big"):
    add(f"matrix_inverse_root.chunk_size_{cs}", _mir(A8_32, 2, "newton_db", chunk_size=cs), None,
        ("chunk_size",), status_of, slow=cs != 0)
add("matrix_inverse_root.method_unknown", _mir(A8_32, 2, "newton"), None, ("method",), status_of)
add("matrix_inverse_root.frobenius_huge", _mir((A8 * 1e30).astype(np.float32), 2,
                                                 O.NewtonDB(scaling=O.FrobeniusScaling())),
    _root_check(A8 * 1e30, 2, 2e-3), ROOT_WORDS, status_of, slow=True)

# ------------------------------------------------------------------------------------- strategy objects
_BAD_SETTINGS = [
    ("NewtonDB", lambda v: O.NewtonDB(num_steps=v), "num_steps", (0, -1, 2.5, float("nan"))),
    ("Chebyshev", lambda v: O.Chebyshev(degree=v), "degree", (0, -3, float("nan"))),
    ("CoupledNewton.max_steps", lambda v: O.CoupledNewton(max_steps=v), "max_steps", (0, 1.5)),
    ("CoupledNewton.rtol", lambda v: O.CoupledNewton(rtol=v), "rtol", (-1e-3, float("nan"), float("inf"))),
    ("NewtonDB.relative_epsilon", lambda v: O.NewtonDB(relative_epsilon=v), "relative_epsilon",
     (-1e-6, float("nan"))),
    ("Chebyshev.relative_epsilon", lambda v: O.Chebyshev(relative_epsilon=v), "relative_epsilon", (-1.0,)),
    ("Eigh.relative_epsilon", lambda v: O.Eigh(relative_epsilon=v), "relative_epsilon", (-1.0, float("nan"))),
    ("Eigh.heuristic", lambda v: O.Eigh(heuristic=v), "heuristic", ("clip",)),
    ("PowerScaling.multiplier", lambda v: O.PowerScaling(multiplier=v), "multiplier", (0.0, -2.0, float("nan"))),
    ("PowerScaling.num_steps", lambda v: O.PowerScaling(num_steps=v), "num_steps", (0,)),
    ("PowerScaling.num_vectors", lambda v: O.PowerScaling(num_vectors=v), "num_vectors", (0,)),
    ("NewtonDB.matmul_dtype", lambda v: O.NewtonDB(matmul_dtype=v), "matmul_dtype", (jnp.int32, "fp8x")),
    ("NewtonDB.scaling", lambda v: O.NewtonDB(scaling=v), "scaling", ("frobenius",)),
]
for label, make, word, values in _BAD_SETTINGS:
    for v in values:
        add(f"{label}.{v}", (lambda make=make, v=v: make(v)), None, (word,))

# ------------------------------------------------------------------------------------------- power_iteration
_DIAG = np.diag([3.0, 1.0, 0.5]).astype(np.float32)
_pi_right = lambda lam_ref, rtol=1e-3: (lambda out: bool(np.allclose(np.asarray(out, np.float64), lam_ref,  # noqa: E731
                                                                      rtol=rtol, atol=0)))
add("power_iteration.diag.eager", lambda: O.power_iteration(_DIAG, num_steps=30), _pi_right(3.0))
add("power_iteration.diag.jit", lambda: jax.jit(lambda a: O.power_iteration(a, num_steps=30))(_DIAG), _pi_right(3.0),
    slow=True)
add("power_iteration.diag.vmap", lambda: jax.vmap(lambda a: O.power_iteration(a, num_steps=30))(
    np.stack([_DIAG, 2 * _DIAG])), _pi_right(np.array([3.0, 6.0])), slow=True)
add("power_iteration.zero", lambda: O.power_iteration(np.zeros((4, 4), np.float32)),
    lambda out: bool(np.isfinite(out) and 0 <= float(out) <= 1e-20), ("zero",), slow=True)
for scale in (1e30, 1e-30):
    add(f"power_iteration.scale{scale:g}", lambda s=scale: O.power_iteration((_DIAG * s).astype(np.float32),
                                                                           num_steps=30),
        _pi_right(3.0 * scale), slow=scale != 1e30)
add("power_iteration.nan.eager", lambda: O.power_iteration(np.where(np.eye(3) > 0, np.nan, _DIAG)), None,
    ("nan", "non-finite"))
add("power_iteration.nan.jit", lambda: jax.jit(O.power_iteration)(np.where(np.eye(3) > 0, np.nan, _DIAG)), None,
    ("nan", "non-finite"), slow=True)
add("power_iteration.inf", lambda: O.power_iteration(np.full((3, 3), np.inf, np.float32)), None,
    ("inf", "non-finite"), slow=True)
add("power_iteration.nonsquare", lambda: O.power_iteration(np.ones((2, 3), np.float32)), None, ("shape", "square"))
add("power_iteration.int", lambda: O.power_iteration(np.eye(3, dtype=np.int32)), None, ("dtype", "floating"))
add("power_iteration.empty_0x0", lambda: O.power_iteration(np.zeros((0, 0), np.float32)),
    lambda out: np.shape(out) == (), ("empty", "n >= 1", "size"))
add("power_iteration.bf16", lambda: O.power_iteration(jnp.asarray(_DIAG, jnp.bfloat16), num_steps=30),
    lambda out: out.dtype == jnp.bfloat16 and _pi_right(3.0, 2e-2)(out), ("dtype", "bfloat16"))
for name, kw in (("num_steps_0", dict(num_steps=0)), ("num_steps_neg", dict(num_steps=-1)),
                 ("num_vectors_0", dict(num_vectors=0)), ("damping_nan", dict(damping=float("nan"))),
                 ("damping_neg", dict(damping=-1.0)), ("num_steps_float", dict(num_steps=2.5))):
    word = name.rsplit("_", 1)[0]
    add(f"power_iteration.{name}", lambda kw=kw: O.power_iteration(_DIAG, **kw), None, (word,),
        slow=name in ("num_steps_neg", "num_steps_float"))

# ----------------------------------------------------------------------------------------------- dash, scale_by_dash
G4 = _RNG.normal(size=(4, 4)).astype(np.float32)


def _dash_reference(g, root_eps=1e-10):
    """First DASH step on one 4x4 block in float64: L^{-1/4} mu R^{-1/4} rescaled to Adam's direction norm."""
    g = np.asarray(g, np.float64)
    L, R = 0.05 * g @ g.T, 0.05 * g.T @ g

    def root(f):
        lam = np.linalg.eigvalsh(f).max()
        return _root_ref(f + (root_eps + 1e-6 * lam) * np.eye(4), 4)

    mu = 0.1 * g
    u = root(L) @ mu @ root(R)
    adam = g / (np.abs(g) + 1e-8)
    return u * np.linalg.norm(adam) / np.linalg.norm(u)


# the settings `_dash_reference` models (a gradient EMA with b1 = 0.9, bias-corrected Adam grafting, no momentum
# after it), named because DASH's defaults differ (b1 = 0, momentum 0.9 on the grafted direction, no bias correction)
_REFERENCE_SETTINGS = dict(b1=0.9, b2=0.95, grafting="adam", graft_bias_correction=True, momentum=0.0)


def _dash_step(g, dtype=jnp.float32, mode="jit", **kw):
    def run():
        tx = O.scale_by_dash(block_size=4, **{**_REFERENCE_SETTINGS, **kw})
        p = jnp.zeros(g.shape, dtype)
        state = tx.init(p)
        upd = jax.jit(tx.update) if mode == "jit" else tx.update
        out, state = upd(jnp.asarray(g, dtype), state, p)
        return out, state
    return run


def _dash_right(ref, rtol):
    return lambda out: (np.asarray(out[0]).dtype == np.asarray(out[1].mu).dtype
                        and _close(np.asarray(out[0], np.float64), ref, rtol))


add("scale_by_dash.first_step.jit", _dash_step(G4), _dash_right(_dash_reference(G4), 2e-3))
add("scale_by_dash.first_step.eager", _dash_step(G4, mode="eager"), _dash_right(_dash_reference(G4), 2e-3),
    slow=True)
# normalized RMSProp grafting: S = G/||G||, so the first step's graft S/(|S| + eps) has Adam's sign pattern
add("scale_by_dash.rmsprop_normalized", _dash_step(G4, grafting="rmsprop_normalized"),
    _dash_right(_dash_reference(G4), 2e-3), slow=True)
add("scale_by_dash.rmsprop_normalized_scale1e-20", _dash_step(G4 * np.float32(1e-20), grafting="rmsprop_normalized"),
    # the ridge (1e-10) swamps factors ~1e-41, so the roots are multiples of I and the step is G's direction
    # at the scale-free graft norm ||S / (|S| + eps)|| = ||sign(G)||, where Adam's graft would be ~1e-12
    lambda out: _close(np.asarray(out[0], np.float64), G4 / np.linalg.norm(G4) * 4.0, 2e-3), slow=True)
add("scale_by_dash.statistics_bf16", _dash_step(G4, statistics_dtype="bfloat16"),
    lambda out: all(f.dtype == jnp.bfloat16 for f in out[1].factors) and np.all(np.isfinite(out[0]))
    and out[0].shape == (4, 4), slow=True)
for scale in (1e10, 1e-10):  # the absolute root_epsilon (1e-10) is part of the reference
    add(f"scale_by_dash.scale{scale:g}", _dash_step(G4 * np.float32(scale)),
        _dash_right(_dash_reference(G4 * scale), 2e-3), slow=True)
for label, dt, tol in (("bf16", jnp.bfloat16, 5e-2), ("f16", jnp.float16, 2e-2)):
    add(f"scale_by_dash.dtype_{label}", _dash_step(G4, dt),
        lambda out, dt=dt, tol=tol: out[0].dtype == dt and _close(out[0], _dash_reference(G4), tol),
        ("dtype", "bfloat16", "float16"), slow=True)
add("scale_by_dash.dtype_int", _dash_step(np.ones((4, 4), np.int32), jnp.int32), None,
    ("dtype", "floating", "integer"))
add("scale_by_dash.dtype_complex", _dash_step(np.ones((4, 4), np.complex64), jnp.complex64), None,
    ("dtype", "floating", "complex"), slow=True)


def _empty_leaf():
    tx = O.scale_by_dash(block_size=4, **_REFERENCE_SETTINGS)
    p = {"w": jnp.zeros((0, 4)), "v": jnp.zeros((4, 4))}
    state = tx.init(p)
    g = {"w": jnp.zeros((0, 4)), "v": jnp.asarray(G4)}
    return jax.jit(tx.update)(g, state, p)


add("scale_by_dash.empty_leaf", _empty_leaf,
    lambda out: out[0]["w"].shape == (0, 4) and _close(out[0]["v"], _dash_reference(G4), 2e-3),
    ("empty", "size"))


def _adam_like_run(bad_index, bad_value, nonfinite="skip", num=6):
    """DASH over ``num`` steps with one gradient replaced by a bad one, and the same run with that step left out.

    Both runs go through one compiled update (what ``nonfinite="skip"`` promises is that the bad step changes
    nothing). Returns ``(updates, final state, updates of the run without the bad step)``."""

    def run():
        tx = O.scale_by_dash(block_size=4, start_preconditioning_step=1, precondition_frequency=2,
                             nonfinite=nonfinite)
        p = jnp.zeros((4, 4))
        upd = jax.jit(tx.update)
        outs, refs = [], []
        state, ref_state = tx.init(p), tx.init(p)
        for i in range(num):
            g = jnp.asarray(G4 * (1.0 + 0.1 * i))
            out, state = upd(g.at[0, 0].set(bad_value) if i == bad_index else g, state, p)
            outs.append(out)
            if i == bad_index:
                refs.append(None)
                continue
            ref, ref_state = upd(g, ref_state, p)
            refs.append(ref)
        return outs, state, refs
    return run


def _skip_check(bad_index):
    def check(res):
        outs, state, refs = res
        leaves = jax.tree_util.tree_leaves(state)
        if not all(np.all(np.isfinite(np.asarray(x))) for x in leaves if np.asarray(x).dtype.kind == "f"):
            return False
        return all(np.allclose(np.asarray(o), np.asarray(r), rtol=1e-4, atol=1e-6)
                   for o, r in zip(outs, refs) if r is not None) and not np.any(np.asarray(outs[bad_index]))
    return check


add("scale_by_dash.huge_gradient_skip", _adam_like_run(2, 1e30), _skip_check(2))
add("scale_by_dash.huge_gradient_f32max", _adam_like_run(1, 3e38), _skip_check(1), slow=True)
add("scale_by_dash.nan_gradient_skip", _adam_like_run(2, np.nan), _skip_check(2), slow=True)
add("scale_by_dash.nan_gradient_raise", _adam_like_run(1, np.nan, "raise", num=2), None, ("non-finite", "nan"),
    slow=True)
add("scale_by_dash.huge_gradient_raise", _adam_like_run(1, 1e30, "raise", num=2), None,
    ("non-finite", "overflow", "huge", "finite"), slow=True)

_DASH_BAD = [
    ("b1", (float("nan"), -0.1, 1.0)), ("b2", (float("nan"), 1.5)), ("factor_decay", (float("nan"), -0.5, 1.5)),
    ("eps", (float("nan"), -1e-8, float("inf"))), ("momentum", (float("nan"), -0.5, 1.0)),
    ("root_epsilon", (float("nan"), -1e-10)), ("block_size", (0, -4, 2.5)),
    ("precondition_frequency", (0, -1)), ("start_preconditioning_step", (0,)),
    ("grafting", ("adamw",)), ("one_dim", ("vector",)), ("nonfinite", ("zero",)),
    ("root_chunk_size", (0, "all")), ("inverse_root", ("newton", 3)),
    ("statistics_dtype", ("int8", "float16")), ("merge_small_dims", ("yes",)),
]
for name, values in _DASH_BAD:
    for v in values:
        first = v == values[0]
        add(f"scale_by_dash.{name}_{v}", _quiet(lambda name=name, v=v: O.scale_by_dash(**{name: v})), None, (name,),
            slow=not first)
        if name in ("eps", "b1"):
            add(f"dash.{name}_{v}", _quiet(lambda name=name, v=v: O.dash(1e-3, **{name: v})), None, (name,),
                slow=True)
for name, values in (("learning_rate", (float("nan"), -1e-3, float("inf"))),
                     ("weight_decay", (float("nan"), -1e-4, float("inf")))):
    for v in values:
        kw = {"learning_rate": 1e-3, name: v}
        add(f"dash.{name}_{v}", _quiet(lambda kw=kw: O.dash(**kw)), None, (name,), slow=v != values[0])


def _dash_adam_run(dtype=jnp.float32, lr=1e-2):
    """dash with Adam grafting and preconditioning deferred past the run equals optax.adamw (b2 = 0.95, matrices
    decayed)."""

    def run():
        opt = O.dash(lr, block_size=4, start_preconditioning_step=100, weight_decay=0.1, **_REFERENCE_SETTINGS)
        p = jnp.ones((4, 4), dtype)
        state = opt.init(p)
        for i in range(3):
            g = jnp.asarray(G4 * (i + 1.0), dtype)
            u, state = jax.jit(opt.update)(g, state, p)
            p = optax.apply_updates(p, u)
        return p

    return run


def _adam_check(p, tol):
    ref_opt = optax.adamw(1e-2, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1)
    q = jnp.ones((4, 4))
    s = ref_opt.init(q)
    for i in range(3):
        u, s = ref_opt.update(jnp.asarray(G4 * (i + 1.0)), s, q)
        q = optax.apply_updates(q, u)
    return _close(np.asarray(p, np.float64), np.asarray(q, np.float64), tol)


def _adam_ref(tol):
    def check(p):
        with jax.numpy_dtype_promotion("standard"):  # optax's bias correction mixes int32 counts and floats
            return _adam_check(p, tol)
    return check


add("dash.adam_phase.f32", _dash_adam_run(), _adam_ref(1e-5), slow=True)
add("dash.adam_phase.bf16", _dash_adam_run(jnp.bfloat16), _adam_ref(2e-2), ("dtype", "bfloat16"), slow=True)

# ---------------------------------------------------------------------------------------------------- schedules
_COUNTS = np.array([0, 1, 5, 9, 10, 50], np.int32)
_SCHED_REFS = {
    "constant": (lambda: O.constant(0.3), lambda c: np.full(c.shape, 0.3)),
    "linear_decay": (lambda: O.linear_decay(1.0, 10), lambda c: np.clip(10 - c, 0, 10) / 10),
    "polynomial_decay": (lambda: O.polynomial_decay(2.0, 10, power=2.0),
                         lambda c: 2.0 * (np.clip(10 - c, 0, 10) / 10) ** 2),
    "cosine_decay": (lambda: O.cosine_decay(1.0, 10), lambda c: 0.5 * (1 + np.cos(np.pi * np.minimum(c, 10) / 10))),
    "inverse_sqrt": (lambda: O.inverse_sqrt(1.0, 2.0), lambda c: 1.0 / np.sqrt(1.0 + c / 2.0)),
    "wsd": (lambda: O.wsd(1.0, 10, cooldown_fraction=0.5),
            lambda c: np.where(c < 5, 1.0, np.clip(10 - c, 0, 5) / 5)),
    "warmup_cosine_decay": (lambda: O.warmup_cosine_decay(1.0, 2, 12),
                            lambda c: np.where(c < 2, c / 2, 0.5 * (1 + np.cos(np.pi * np.clip(c - 2, 0, 10) / 10)))),
    "warmup": (lambda: O.warmup(O.linear_decay(1.0, 8), 2),
               lambda c: np.where(c < 2, c / 2, np.clip(8 - (c - 2), 0, 8) / 8)),
    "join": (lambda: O.join([O.constant(1.0), O.linear_decay(1.0, 4)], [3]),
             lambda c: np.where(c < 3, 1.0, np.clip(4 - (c - 3), 0, 4) / 4)),
}


def _sched_check(ref, counts):
    return lambda out: _close(np.asarray(out, np.float64), ref(np.asarray(counts, np.float64)), 1e-5) or bool(
        np.allclose(np.asarray(out, np.float64), ref(np.asarray(counts, np.float64)), rtol=1e-5, atol=1e-6))


for name, (make, ref) in _SCHED_REFS.items():
    add(f"{name}.values.eager", lambda make=make: make()(_COUNTS), _sched_check(ref, _COUNTS))
    add(f"{name}.values.jit", lambda make=make: jax.jit(make())(_COUNTS), _sched_check(ref, _COUNTS), slow=True)
    add(f"{name}.values.vmap", lambda make=make: jax.vmap(make())(_COUNTS), _sched_check(ref, _COUNTS), slow=True)
    neg = np.array([-5, -1], np.int32)
    add(f"{name}.negative_count", lambda make=make, neg=neg: make()(neg),
        lambda out, ref=ref: bool(np.allclose(np.asarray(out, np.float64), ref(np.zeros(2)), atol=1e-6)),
        ("count", "negative"), slow=name not in ("inverse_sqrt", "warmup"))
    big = np.array([2**31 - 1], np.int32)
    add(f"{name}.huge_count", lambda make=make, big=big: make()(big),
        lambda out, ref=ref, big=big: bool(np.allclose(np.asarray(out, np.float64), ref(np.float64(big)),
                                                         rtol=1e-4, atol=1e-6)), ("count",), slow=True)
    # A NaN count propagates (as in optax), except through a constant schedule, whose value ignores it.
    add(f"{name}.nan_count", lambda make=make: make()(np.array([np.nan], np.float32)),
        (lambda out: bool(np.allclose(out, 0.3))) if name == "constant" else
        (lambda out: bool(np.all(np.isnan(np.asarray(out))))), ("count", "nan"), slow=name != "linear_decay")
    add(f"{name}.string_count", lambda make=make: make()("3"), None, ("count",), slow=name != "constant")

_SCHED_BAD = [
    ("constant.value", lambda v: O.constant(v), "value", (float("nan"), -0.1, float("inf"))),
    ("linear_decay.init_value", lambda v: O.linear_decay(v, 10), "init_value", (float("nan"), -1.0)),
    ("linear_decay.decay_steps", lambda v: O.linear_decay(1.0, v), "decay_steps", (0, -5, 10.5, float("nan"))),
    ("polynomial_decay.power", lambda v: O.polynomial_decay(1.0, 10, power=v), "power", (-1.0, float("nan"))),
    ("polynomial_decay.end_value", lambda v: O.polynomial_decay(1.0, 10, end_value=v), "end_value",
     (float("nan"), -0.5)),
    ("cosine_decay.alpha", lambda v: O.cosine_decay(1.0, 10, alpha=v), "alpha", (-0.1, 1.5, float("nan"))),
    ("cosine_decay.exponent", lambda v: O.cosine_decay(1.0, 10, exponent=v), "exponent", (0.0, float("nan"))),
    ("cosine_decay.init_value", lambda v: O.cosine_decay(v, 10), "init_value", (float("nan"),)),
    ("cosine_decay.decay_steps", lambda v: O.cosine_decay(1.0, v), "decay_steps", (0,)),
    ("inverse_sqrt.timescale", lambda v: O.inverse_sqrt(1.0, v), "timescale", (0.0, -1.0, float("nan"))),
    ("inverse_sqrt.init_value", lambda v: O.inverse_sqrt(v), "init_value", (float("nan"), -1.0)),
    ("wsd.total_steps", lambda v: O.wsd(1.0, v), "total_steps", (0, -1)),
    ("wsd.warmup_steps", lambda v: O.wsd(1.0, 10, warmup_steps=v), "warmup_steps", (-1, 20)),
    ("wsd.cooldown_fraction", lambda v: O.wsd(1.0, 10, cooldown_fraction=v), "cooldown_fraction",
     (0.0, 1.5, float("nan"))),
    ("wsd.cooldown_shape", lambda v: O.wsd(1.0, 10, cooldown_shape=v), "cooldown_shape", ("sqrt",)),
    ("wsd.init_value", lambda v: O.wsd(v, 10), "init_value", (float("nan"),)),
    ("warmup_cosine_decay.warmup_steps", lambda v: O.warmup_cosine_decay(1.0, v, 10), "warmup_steps",
     (10, 20, -1)),
    ("warmup_cosine_decay.peak_value", lambda v: O.warmup_cosine_decay(v, 2, 10), "peak_value", (float("nan"), -1.0)),
    ("warmup_cosine_decay.exponent", lambda v: O.warmup_cosine_decay(1.0, 2, 10, exponent=v), "exponent",
     (0.0, float("nan"))),
    ("warmup.warmup_steps", lambda v: O.warmup(O.linear_decay(1.0, 10), v), "warmup_steps", (0, -1, 2.5)),
    ("warmup.init_value", lambda v: O.warmup(O.linear_decay(1.0, 10), 2, init_value=v), "init_value",
     (float("nan"), -1.0)),
    ("warmup.schedule", lambda v: O.warmup(v, 2), "schedule", (0.1, None)),
    ("join.boundaries", lambda v: O.join([O.constant(1.0), O.constant(0.5)], v), "boundar",
     ([], [1, 2], [-1], [2.5])),
    ("join.decreasing", lambda v: O.join([O.constant(1.0)] * 3, v), "boundar", ([5, 2], [3, 3])),
    ("join.schedules", lambda v: O.join(v, []), "schedule", ([], [0.1])),
]
for label, make, word, values in _SCHED_BAD:
    for i, v in enumerate(values):
        add(f"{label}.{v!r}", _quiet(lambda make=make, v=v: make(v)), None, (word,), slow=i > 0)

# ----------------------------------------------------------------------------------- tail_degree, robustness_exponent
for label, make, p_ref in (("linear", lambda: O.linear_decay(1.0, 1000), 1.0),
                           ("cosine", lambda: O.cosine_decay(1.0, 1000), 2.0),
                           ("poly3", lambda: O.polynomial_decay(1.0, 1000, power=3.0), 3.0),
                           ("wsd_cosine", lambda: O.wsd(1.0, 1000, cooldown_shape="cosine"), 2.0),
                           ("constant", lambda: O.constant(0.1), 0.0),
                           ("floored", lambda: O.linear_decay(1.0, 1000, end_value=0.01), 0.0)):
    T = 100 if label == "constant" else None
    add(f"tail_degree.{label}", _quiet(lambda make=make, T=T: O.tail_degree(make(), T)),
        lambda out, p_ref=p_ref: abs(float(out) - p_ref) < 2e-2, slow=label != "constant")
add("tail_degree.inverse_sqrt_no_horizon", lambda: O.tail_degree(O.inverse_sqrt(1.0)), None, ("total_steps",))
for v in (0, -10, 2.5):
    add(f"tail_degree.total_steps_{v}", lambda v=v: O.tail_degree(O.linear_decay(1.0, 10), v), None,
        ("total_steps",), slow=v != 0)
for vr in ((1e-2, 1e-3), (0.0, 1e-2), (1e-3, 2.0), (float("nan"), 1e-2), (1e-3,)):
    add(f"tail_degree.v_range_{vr}", lambda vr=vr: O.tail_degree(O.linear_decay(1.0, 1000), v_range=vr), None,
        ("v_range",), slow=vr != (0.0, 1e-2))
for n in (0, 1, 2.5):
    add(f"tail_degree.num_points_{n}", lambda n=n: O.tail_degree(O.linear_decay(1.0, 1000), num_points=n), None,
        ("num_points",), slow=n != 1)
for r in (-1e-6, float("nan")):
    add(f"tail_degree.rtol_{r}", _quiet(lambda r=r: O.tail_degree(O.linear_decay(1.0, 1000), rtol=r)), None,
        ("rtol",), slow=r != -1e-6)
add("tail_degree.nan_schedule", lambda: O.tail_degree(lambda c: jnp.full(jnp.shape(c), jnp.nan), 100), None,
    ("finite", "nan"))
add("tail_degree.not_callable", lambda: O.tail_degree(0.1, 100), None, ("schedule", "callable"))
for p, ref in ((0.0, 1.0), (1.0, 1 / 3), (2.0, 0.2), (np.float32(0.5), 0.5), (jnp.asarray(1.0), 1 / 3)):
    add(f"robustness_exponent.p_{float(p)}_{type(p).__name__}", lambda p=p: O.robustness_exponent(p),
        lambda out, ref=ref: abs(float(out) - ref) < 1e-6, slow=float(p) != 1.0)
for p in (-1.0, float("nan"), float("inf"), "one", None):
    add(f"robustness_exponent.p_{p}", lambda p=p: O.robustness_exponent(p), None, ("p",),
        slow=p not in (-1.0, "one"))

# ------------------------------------------------------------------ schedule_table, misspecification_sweep, fit_slopes
add("schedule_table.values", lambda: O.schedule_table([O.constant(1.0), O.linear_decay(1.0, 4)], 4),
    lambda out: _close(out, np.array([[1, 1, 1, 1], [1, 0.75, 0.5, 0.25]]), 1e-6))
add("schedule_table.scalar_schedule", lambda: O.schedule_table([lambda c: 0.5], 3),
    lambda out: _close(out, np.full((1, 3), 0.5), 1e-6), ("schedule", "shape"))
add("schedule_table.nan_schedule", lambda: O.schedule_table([lambda c: jnp.full(jnp.shape(c), jnp.nan)], 3), None,
    ("nan", "finite"))
add("schedule_table.total_steps_0", lambda: O.schedule_table([O.constant(1.0)], 0), None, ("total_steps",))
add("schedule_table.empty", lambda: O.schedule_table([], 3), None, ("schedules", "empty"), slow=True)
add("schedule_table.not_callable", lambda: O.schedule_table([0.1], 3), None, ("schedule", "callable"))


def _sweep_ref(table, rhos, eps, diameter=1.0):
    """NumPy float64 projected subgradient descent with (numerically) no noise: the errors eps * |x_T|."""
    table = np.asarray(table, np.float64)
    out = np.zeros((table.shape[0], len(rhos), len(eps)))
    for s in range(table.shape[0]):
        for k, rho in enumerate(rhos):
            for e, ep in enumerate(eps):
                x = diameter
                for eta in table[s]:
                    x = np.clip(x - rho * eta * ep * np.sign(x), -diameter, diameter)
                out[s, k, e] = ep * abs(x)
    return out


_TAB = np.array([[0.31, 0.21, 0.11, 0.05], [0.23, 0.23, 0.23, 0.23]], np.float32)  # no iterate lands on 0
_RHOS = np.array([1.0, 2.0, 4.0], np.float32)
_EPS = np.array([0.5, 1.0], np.float32)


def _sweep(**kw):
    args = dict(table=_TAB, rhos=_RHOS, eps=_EPS, num_replicates=2, noise=1e-12)
    args.update(kw)
    return lambda: O.misspecification_sweep(jax.random.key(0), **args)


def _sweep_check(scale=1.0):
    ref = _sweep_ref(_TAB * scale, _RHOS, _EPS)
    return lambda res: _close(np.asarray(res.errors).mean(-1), ref, 1e-4) and _close(res.worst, ref.max(-1), 1e-4)


add("misspecification_sweep.deterministic", _sweep(), _sweep_check())
add("misspecification_sweep.one_rho", _sweep(rhos=np.array([2.0], np.float32)),
    lambda res: _close(res.worst, _sweep_ref(_TAB, [2.0], _EPS).max(-1), 1e-4), slow=True)
add("misspecification_sweep.zero_table", _sweep(table=np.zeros((1, 3), np.float32)),
    lambda res: _close(res.worst, np.ones((1, 3)) * 1.0, 1e-6), slow=True)
for name, val, word in (("rhos", np.array([1.0, 0.0], np.float32), "rhos"),
                        ("rhos", np.array([1.0, -2.0], np.float32), "rhos"),
                        ("rhos", np.array([np.nan], np.float32), "rhos"),
                        ("rhos", np.array([], np.float32), "rhos"),
                        ("eps", np.array([np.nan, 1.0], np.float32), "eps"),
                        ("eps", np.array([-1.0], np.float32), "eps"),
                        ("table", np.array([[0.1, -0.1]], np.float32), "table"),
                        ("table", np.array([[0.1, np.nan]], np.float32), "table"),
                        ("table", np.array([0.1, 0.2], np.float32), "table"),
                        ("table", np.zeros((1, 0), np.float32), "table"),
                        ("table", np.zeros((0, 3), np.float32), "table"),
                        ("table", np.ones((1, 3), np.int32), "table"),
                        ("num_replicates", 0, "num_replicates"), ("num_replicates", 2.5, "num_replicates"),
                        ("diameter", float("nan"), "diameter"), ("diameter", 0.0, "diameter"),
                        ("diameter", float("inf"), "diameter"),
                        ("noise", float("nan"), "noise"), ("noise", float("inf"), "noise"),
                        ("labels", ("a",), "labels"), ("total_steps", 5, "total_steps")):
    first = name in ("rhos", "table") and val is not None and np.size(val) and np.ravel(val)[-1] in (0.0,)
    add(f"misspecification_sweep.{name}_{np.ravel(np.asarray(val, dtype=object))[:2].tolist()}_{np.shape(val)}",
        _sweep(**{name: val}), None, (word,), slow=not first and name not in ("noise", "num_replicates"))
add("misspecification_sweep.schedules_no_horizon", _quiet(lambda: O.misspecification_sweep(
    jax.random.key(0), [O.inverse_sqrt(0.1)], _RHOS, num_replicates=2)), None, ("total_steps", "horizon"))
add("misspecification_sweep.schedules_mapping", _quiet(lambda: O.misspecification_sweep(
    jax.random.key(0), {"a": O.linear_decay(0.3, 4)}, _RHOS, eps=_EPS, num_replicates=2, noise=1e-12)),
    lambda res: res.labels == ("a",) and _close(res.worst, _sweep_ref(np.array([[0.3, 0.225, 0.15, 0.075]]), _RHOS,
                                                                      _EPS).max(-1), 1e-4), slow=True)
add("misspecification_sweep.key_int", lambda: O.misspecification_sweep(0, _TAB, _RHOS, num_replicates=2), None,
    ("key",), slow=True)


def _sweep_result(slope=0.5, rhos=(1.0, 2.0, 4.0, 8.0, 16.0), errors=None):
    rhos = np.asarray(rhos, np.float32)
    if errors is None:
        errors = np.broadcast_to((0.1 * rhos**slope)[None, :, None, None], (1, rhos.size, 2, 4)).astype(np.float32)
    errors = jnp.asarray(errors)
    mean = errors.mean(-1)
    return O.SweepResult(errors=errors, rhos=jnp.asarray(rhos), eps=jnp.ones(errors.shape[2]),
                         worst=mean.max(-1), worst_eps_index=jnp.argmax(mean, -1).astype(jnp.int32))


def _fit(res=None, **kw):
    return lambda: O.fit_slopes(jax.random.key(1), res if res is not None else _sweep_result(), **kw)


add("fit_slopes.exact_power_law", _fit(fit_range=(1.0, 16.0), num_resamples=5),
    lambda out: bool(np.allclose(out.slope, 0.5, atol=1e-4) and np.allclose(out.boot, 0.5, atol=1e-4)
                     and np.allclose(out.intercept, np.log(0.1), atol=1e-4)), slow=True)
add("fit_slopes.one_rho_in_range", _fit(fit_range=(3.0, 5.0)), None, ("rho", "fit_range"))
add("fit_slopes.single_point_sweep", _fit(_sweep_result(rhos=(4.0,)), fit_range=(1.0, 16.0)), None,
    ("rho", "fit_range"), slow=True)
for fr in ((0.0, 16.0), (-1.0, 16.0), (16.0, 4.0), (float("nan"), 16.0)):
    add(f"fit_slopes.fit_range_{fr}", _fit(fit_range=fr), None, ("fit_range",), slow=fr != (0.0, 16.0))
for lv in (0.0, 1.0, float("nan")):
    add(f"fit_slopes.level_{lv}", _fit(level=lv), None, ("level",), slow=lv != 1.0)
for nr in (0, -1, 2.5):
    add(f"fit_slopes.num_resamples_{nr}", _fit(num_resamples=nr), None, ("num_resamples",), slow=nr != 0)
_bad = np.broadcast_to(np.array([0.1, 0.2, 0.4, 0.8, 1.6], np.float32)[None, :, None, None], (1, 5, 2, 4)).copy()
_bad[0, 2] = np.nan
add("fit_slopes.nan_errors", _fit(_sweep_result(errors=_bad), fit_range=(1.0, 16.0), num_resamples=5), None,
    ("nan", "finite", "errors"))
_zero = np.broadcast_to(np.array([0.1, 0.2, 0.4, 0.8, 1.6], np.float32)[None, :, None, None], (1, 5, 2, 4)).copy()
_zero[0, 1] = 0.0
add("fit_slopes.zero_worst", _fit(_sweep_result(errors=_zero), fit_range=(1.0, 16.0), num_resamples=5), None,
    ("zero", "positive", "log"), slow=True)
add("fit_slopes.not_a_result", lambda: O.fit_slopes(jax.random.key(1), {"worst": 1}), None,
    ("result", "SweepResult"), slow=True)

# ------------------------------------------------------------------------------------------------------- plots


def _plot(fn):
    def run():
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        try:
            return fn()
        finally:
            plt.close("all")
    return run


add("plot_schedule.lines", _plot(lambda: [ln.get_ydata().tolist() for ln in
                                           O.plot_schedule(O.linear_decay(1.0, 4), 4).get_lines()]),
    lambda out: len(out) == 1 and bool(np.allclose(out[0], [1.0, 0.75, 0.5, 0.25], atol=1e-6)), slow=True)
add("plot_schedule.total_steps_0", _plot(lambda: O.plot_schedule(O.linear_decay(1.0, 4), 0)), None,
    ("num_steps",))
add("plot_schedule.no_horizon", _plot(lambda: O.plot_schedule(O.inverse_sqrt(1.0))), None,
    ("num_steps", "horizon"), slow=True)
add("plot_risk_curve.mismatched_fit", _plot(lambda: O.plot_risk_curve(
    _sweep_result(), fit=O.fit_slopes(jax.random.key(0), O.SweepResult(
        errors=jnp.ones((2, 2, 1, 1)), rhos=jnp.array([4.0, 8.0]), eps=jnp.ones(1), worst=jnp.ones((2, 2)),
        worst_eps_index=jnp.zeros((2, 2), jnp.int32)), num_resamples=2))), None, ("fit", "schedules"), slow=True)
add("plot_risk_curve.not_a_result", _plot(lambda: O.plot_risk_curve(np.ones((2, 3)))), None,
    ("result", "SweepResult"))


@pytest.mark.parametrize("case", params(CASES))
def test_fuzz(case):
    assert_good(case)
