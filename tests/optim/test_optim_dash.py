"""Tests of icmlx.optim DASH (scale_by_dash / dash) against a plain NumPy float64 reference Shampoo."""

import io

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from icmlx.optim import (
    DASH_STATIC_ARGS,
    Chebyshev,
    CoupledNewton,
    DashState,
    Eigh,
    NewtonDB,
    dash,
    scale_by_dash,
)
from icmlx.optim._blocking import blockify, make_block_plan, unblockify

DT = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


# ---------------------------------------------------------------------------------------------------------
# A plain NumPy reference Shampoo (float64, Python loops over block tiles; independent of icmlx's layout).
# ---------------------------------------------------------------------------------------------------------


def _np_root(a, p, eps=1e-10):
    w, q = np.linalg.eigh(0.5 * (a + a.T))
    w = w - min(w.min(), 0.0) + eps
    return (q * w ** (-1.0 / p)) @ q.T


def _view(shape, B=None):
    """scale_by_dash's documented shape rule (merge_small_dims=True with B, False with None), by enumeration."""
    sq = tuple(d for d in shape if d != 1)
    if len(sq) < 3:
        return sq
    if B is None:
        return (sq[0], int(np.prod(sq[1:])))
    runs = [[sq[0]]]  # adjacent dims merged left to right while the product stays <= B
    for d in sq[1:]:
        if np.prod(runs[-1]) * d <= B:
            runs[-1].append(d)
        else:
            runs.append([d])
    dims = [int(np.prod(r)) for r in runs] if len(runs) > 1 else list(sq)
    if len(dims) == 2:
        return tuple(dims)
    cands = [(int(np.prod(dims[:k])), int(np.prod(dims[k:]))) for k in range(1, len(dims))]
    best = min(max(c) for c in cands)
    return [c for c in cands if max(c) == best][-1]


def reference_dash(grads_seq, *, B, b1=0.0, b2=0.99, beta=0.95, eps=1e-8, freq=10, t0=1, mu=0.9,
                   nesterov=True, one_dim="adam", grafting="rmsprop_normalized", merge=True,
                   exponents=(0.25, 0.25, 0.5), graft_bc=False):
    """Return the list of update dicts (direction before learning rate) for a sequence of grad dicts; the
    defaults are `scale_by_dash`'s."""
    st = {}
    outs = []
    for t, grads in enumerate(grads_seq, start=1):
        out = {}
        for name, g in grads.items():
            g = np.asarray(g, np.float64)
            s = st.setdefault(name, {"m": np.zeros_like(g), "v": np.zeros_like(g), "M": np.zeros_like(g),
                                     "vg": np.zeros_like(g), "mg": np.zeros_like(g), "L": {}, "R": {}, "Lb": {},
                                     "Rb": {}})
            s["m"] = b1 * s["m"] + (1 - b1) * g
            s["v"] = b2 * s["v"] + (1 - b2) * g * g
            adam = (s["m"] / (1 - b1**t)) / (np.sqrt(s["v"] / (1 - b2**t)) + eps)
            cg = (1 - b2**t) if graft_bc else 1.0  # the grafting's second-moment bias correction
            # grafting accumulator of the preconditioned leaves (the normalized ones divide g by ||g||_F)
            sg = g / (np.linalg.norm(g) + 1e-25) if grafting.endswith("_normalized") else g
            if grafting.startswith("adagrad"):
                s["vg"] = s["vg"] + sg * sg
                graft = sg / (np.sqrt(s["vg"]) + eps)
            elif grafting.startswith("rmsprop"):
                s["vg"] = b2 * s["vg"] + (1 - b2) * sg * sg
                graft = sg / (np.sqrt(s["vg"] / cg) + eps)
            elif grafting == "adam_normalized":
                s["mg"] = b1 * s["mg"] + (1 - b1) * sg
                s["vg"] = b2 * s["vg"] + (1 - b2) * sg * sg
                graft = (s["mg"] / (1 - b1**t)) / (np.sqrt(s["vg"] / cg) + eps)
            else:
                graft = (s["m"] / (1 - b1**t)) / (np.sqrt(s["v"] / cg) + eps)
            view = _view(g.shape, B if merge else None)
            if len(view) == 2 or (len(view) == 1 and one_dim == "shampoo"):
                vec = len(view) == 1
                m_, n_ = (view[0], 1) if vec else view
                g2, mt2, ad2 = (x.reshape(m_, n_) for x in (g, s["m"], graft))
                p2 = np.zeros_like(g2)
                refresh = t >= t0 and (t == t0 or t % freq == 0)
                for i in range(0, m_, B):
                    for j in range(0, n_, B):
                        sl = (slice(i, i + B), slice(j, j + B))
                        G = g2[sl]
                        key = (i, j)
                        L = s["L"].get(key, np.zeros((G.shape[0],) * 2))
                        s["L"][key] = beta * L + (1 - beta) * G @ G.T
                        if not vec:
                            R = s["R"].get(key, np.zeros((G.shape[1],) * 2))
                            s["R"][key] = beta * R + (1 - beta) * G.T @ G
                        if refresh:
                            el, er = (exponents[2], 0.0) if vec else exponents[:2]
                            eye_l, eye_r = np.eye(G.shape[0]), np.eye(G.shape[1])
                            s["Lb"][key] = _np_root(s["L"][key], 1 / el) if el else eye_l
                            if not vec:
                                s["Rb"][key] = _np_root(s["R"][key], 1 / er) if er else eye_r
                        if t >= t0:
                            U = s["Lb"][key] @ mt2[sl]
                            if not vec:
                                U = U @ s["Rb"][key]
                            if grafting == "none":
                                p2[sl] = U
                            else:
                                p2[sl] = U * np.linalg.norm(ad2[sl]) / (np.linalg.norm(U) + 1e-16)
                        else:
                            p2[sl] = mt2[sl] if grafting == "none" else ad2[sl]
                P = p2.reshape(g.shape)
            else:
                P = adam
            if mu > 0:
                s["M"] = mu * s["M"] + P
                P = P + mu * s["M"] if nesterov else s["M"]
            out[name] = P
        outs.append(out)
    return outs


def _grads(seed, shapes, n):
    rng = np.random.default_rng(seed)
    return [{k: rng.standard_normal(sh) for k, sh in shapes.items()} for _ in range(n)]


def _run(tx, grads_seq, params):
    state = tx.init(params)
    upd = jax.jit(tx.update)
    outs = []
    for g in grads_seq:
        u, state = upd(jax.tree.map(lambda x: jnp.asarray(x, DT), g), state, params)
        outs.append(u)
    return outs, state


SHAPES = {"w": (20, 16), "c": (3, 1, 4, 6), "b": (16,), "s": ()}


@pytest.fixture(scope="module")
def ref_setup():
    grads = _grads(0, SHAPES, 6)
    params = {k: jnp.zeros(sh, DT) for k, sh in SHAPES.items()}
    return grads, params


def _max_rel(outs, refs, keys=None):
    err = 0.0
    for o, r in zip(outs, refs):
        for k in keys or r:
            a, b = np.asarray(o[k], np.float64), r[k]
            err = max(err, np.abs(a - b).max() / (np.abs(b).max() + 1e-30))
    return err


# ---------------------------------------------------------------------------------------------------------
# Block partition
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes, B",
    [
        ([(96, 64)], 32),
        ([(100, 70), (70, 100), (33, 40)], 32),  # ragged rows, ragged cols, smaller than B in one dim
        ([(5, 3, 7, 4), (6, 1, 10), (2, 3, 4)], 8),  # 4-D, squeezable 3-D, 3-D
        ([(50,), (12,), ()], 16),  # vectors (shampoo path) and a scalar (Adam)
    ],
)
def test_blockify_roundtrip_bit_exact(shapes, B):
    rng = np.random.default_rng(1)
    leaves = [jnp.asarray(rng.standard_normal(s), jnp.float32) for s in shapes]
    plan = make_block_plan(tuple(shapes), B, "shampoo")
    groups = blockify(plan, leaves)
    for g, grp in zip(groups, plan.groups):
        assert g.shape == (grp.count, grp.r, grp.c)
        assert grp.r <= B and grp.c <= B
    back = unblockify(plan, groups, leaves)
    for a, b in zip(leaves, back):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # every entry appears in exactly one block
    n_pre = sum(int(np.prod(s)) for s in shapes if len(_view(s)) >= 1)
    assert sum(int(np.prod(g.shape)) for g in groups) == n_pre


def test_block_plan_matches_dash_layout():
    # The DASH docstring example: 32000 x 2048 at B=1024 -> 62 full blocks + 2 (256, 1024) remainders; the
    # left factors of the full blocks and both right-factor sets share one (126, 1024, 1024) stack.
    plan = make_block_plan(((32000, 2048),), 1024)
    counts = {(g.r, g.c): g.count for g in plan.groups}
    assert counts == {(1024, 1024): 62, (256, 1024): 2}
    stacks = {(z, root): n for z, root, n, _ in plan.stacks}
    assert stacks == {(1024, 4): 126, (256, 4): 2}
    # padding for 4 shards
    plan4 = make_block_plan(((32000, 2048),), 1024, num_shards=4)
    assert {(z, npad) for z, _, _, npad in plan4.stacks} == {(1024, 128), (256, 4)}


# ---------------------------------------------------------------------------------------------------------
# Update rule against the NumPy reference
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.x64
def test_matches_numpy_reference_eigh(ref_setup):
    grads, params = ref_setup
    tx = scale_by_dash(8, inverse_root=Eigh(), precondition_frequency=2, start_preconditioning_step=3)
    outs, state = _run(tx, grads, params)
    refs = reference_dash(grads, B=8, freq=2, t0=3)
    # float32 eigh of factors with condition numbers up to ~1e4 -> roots accurate to ~1e-4 relative
    tol = 1e-8 if DT == jnp.float64 else 2e-3
    assert _max_rel(outs, refs) <= tol
    assert isinstance(state, DashState) and int(state.count) == 6
    assert int(state.root_failures) == 0  # a healthy run rejects no refresh


def test_matches_numpy_reference_ndb_momentum(ref_setup):
    grads, params = ref_setup
    # root_chunk_size=3: the roots are solved 3 blocks at a time in a lax.map loop (the CPU layout at large
    # B; at these small B the default "auto" gives one chunk >= the stack, i.e. the unchunked path the other
    # tests run); same independent reference
    tx = scale_by_dash(8, inverse_root=NewtonDB(num_steps=14), precondition_frequency=2,
                       start_preconditioning_step=3, momentum=0.5, nesterov=True, root_chunk_size=3)
    outs, state = _run(tx, grads, params)
    refs = reference_dash(grads, B=8, freq=2, t0=3, mu=0.5, nesterov=True)
    # NDB (14 steps, ridge 1e-6 lam_max) vs exact eigh roots: block condition numbers ~1e3 are resolved
    # to ~1e-3; the grafting rescale removes any scale error.
    assert _max_rel(outs, refs) <= 1e-2
    assert int(state.root_failures) == 0


def test_one_dim_shampoo_path_and_heavy_ball():
    shapes = {"v": (12,), "w": (6, 4)}
    grads = _grads(2, shapes, 7)
    params = {k: jnp.zeros(s, DT) for k, s in shapes.items()}
    tx = scale_by_dash(4, inverse_root="eigh", one_dim="shampoo", start_preconditioning_step=5,
                       precondition_frequency=1, momentum=0.3, nesterov=False)
    outs, _ = _run(tx, grads, params)
    refs = reference_dash(grads, B=4, freq=1, t0=5, one_dim="shampoo", mu=0.3, nesterov=False)
    tol = 1e-8 if DT == jnp.float64 else 2e-3
    assert _max_rel(outs, refs) <= tol


def test_no_grafting_matches_reference(ref_setup):
    grads, params = ref_setup
    tx = scale_by_dash(8, inverse_root="eigh", grafting="none", precondition_frequency=2,
                       start_preconditioning_step=3)
    outs, _ = _run(tx, grads, params)
    refs = reference_dash(grads, B=8, freq=2, t0=3, grafting="none")
    # raw L^-1/4 G R^-1/4 (no norm rescale), matrices only: Adam-routed leaves still get Adam
    tol = 1e-8 if DT == jnp.float64 else 2e-3
    assert _max_rel(outs, refs) <= tol


def test_disabled_preconditioning_equals_optax_adam(ref_setup):
    grads, params = ref_setup
    tx = scale_by_dash(8, b1=0.9, b2=0.99, eps=1e-8, grafting="adam", graft_bias_correction=True, momentum=0.0,
                       start_preconditioning_step=10**6)
    outs, _ = _run(tx, grads, params)
    with jax.numpy_dtype_promotion("standard"):  # optax's bias correction mixes int32 and float
        ref_outs, _ = _run(optax.scale_by_adam(b1=0.9, b2=0.99, eps=1e-8), grads, params)
    # identical formulas and operation order: float32 rounding only
    assert _max_rel(outs, [jax.tree.map(np.asarray, r) for r in ref_outs]) <= 1e-6


def test_long_sides_fall_back_to_adam_and_state_stays_small():
    # a (40, 6) "embedding" past max_precondition_dim=32 gets exactly Adam's update; the (20, 16) matrix keeps
    # its Kronecker factors (its update differs from Adam's)
    params = {"emb": jnp.zeros((40, 6), DT), "w": jnp.zeros((20, 16), DT)}
    grads = _grads(3, {"emb": (40, 6), "w": (20, 16)}, 3)
    tx = scale_by_dash(8, b1=0.9, b2=0.99, eps=1e-8, momentum=0.0, precondition_frequency=1, max_precondition_dim=32)
    outs, state = _run(tx, grads, params)
    with jax.numpy_dtype_promotion("standard"):  # optax's bias correction mixes int32 and float
        ref_outs, _ = _run(optax.scale_by_adam(b1=0.9, b2=0.99, eps=1e-8), grads, params)
    refs = [jax.tree.map(np.asarray, r) for r in ref_outs]
    assert _max_rel(outs, refs, keys=["emb"]) <= 1e-6
    assert _max_rel(outs[1:], refs[1:], keys=["w"]) > 1e-2
    assert sum(f.shape[0] for f in state.factors) == 2 * 6  # only w's 3 x 2 blocks of 8 x 8 (L and R)
    # the embedding-heavy model of benchmarks/dash_vs_shampoo.py: state <= 3x the parameters by default
    # (Adam's mu and nu are 2x; without the fallback the embedding's factors make it 6.9x)
    shapes = {"embed": (50_000, 64), "conv": (3, 3, 64, 64), "dense1": (1024, 256), "dense2": (256, 10)}
    tree = {k: jax.ShapeDtypeStruct(v, jnp.float32) for k, v in shapes.items()}

    def nbytes(t):
        return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(t))

    assert nbytes(jax.eval_shape(scale_by_dash(128).init, tree)) <= 3 * nbytes(tree)
    assert nbytes(jax.eval_shape(scale_by_dash(128, max_precondition_dim=None).init, tree)) > 6 * nbytes(tree)
    with pytest.raises(ValueError, match="max_precondition_dim"):
        scale_by_dash(8, max_precondition_dim=0)


def test_grafting_choices():
    shapes = {"w": (16, 24)}
    grads = _grads(3, shapes, 3)
    params = {"w": jnp.zeros((16, 24), DT)}
    outs, _ = _run(scale_by_dash(8, grafting="adagrad", precondition_frequency=1), grads, params)
    assert np.all(np.isfinite(np.asarray(outs[-1]["w"])))
    # sgd grafting without momentum: every 8x8 block of the update has the Frobenius norm of the gradient block
    outs, _ = _run(scale_by_dash(8, grafting="sgd", momentum=0.0, precondition_frequency=1), grads, params)
    u, g = np.asarray(outs[-1]["w"]), grads[-1]["w"]
    for i in range(0, 16, 8):
        for j in range(0, 24, 8):
            np.testing.assert_allclose(np.linalg.norm(u[i : i + 8, j : j + 8]),
                                       np.linalg.norm(g[i : i + 8, j : j + 8]), rtol=1e-5)


@pytest.mark.parametrize("grafting", ["rmsprop_normalized", "adagrad_normalized", "adam_normalized"])
def test_normalized_grafting_matches_numpy(grafting):
    # gradient scales 1e-2 ... 1e2 across steps, so the per-leaf normalization changes the grafting norms
    shapes = {"w": (16, 12), "b": (12,)}
    grads = [{k: v * 10.0 ** (t % 5 - 2) for k, v in g.items()} for t, g in enumerate(_grads(5, shapes, 5))]
    params = {k: jnp.zeros(sh, DT) for k, sh in shapes.items()}
    tx = scale_by_dash(8, inverse_root="eigh", grafting=grafting, precondition_frequency=2,
                       start_preconditioning_step=2)
    outs, _ = _run(tx, grads, params)
    refs = reference_dash(grads, B=8, freq=2, t0=2, grafting=grafting)
    tol = 1e-8 if DT == jnp.float64 else 2e-3
    assert _max_rel(outs, refs) <= tol  # "b" (Adam-routed) keeps the raw-gradient Adam update
    plain = reference_dash(grads, B=8, freq=2, t0=2, grafting=grafting.removesuffix("_normalized"))
    assert _max_rel(outs, plain, keys=["w"]) > 0.1  # the normalization is not a no-op here


@pytest.mark.parametrize("bias_correction", [False, True])
@pytest.mark.parametrize("grafting", ["rmsprop_normalized", "adam_normalized", "adam"])
def test_graft_bias_correction_matches_numpy(grafting, bias_correction):
    shapes = {"w": (16, 12), "b": (12,)}
    grads = [{k: v * 10.0 ** (t % 3 - 1) for k, v in g.items()} for t, g in enumerate(_grads(6, shapes, 5))]
    params = {k: jnp.zeros(sh, DT) for k, sh in shapes.items()}
    tx = scale_by_dash(8, b1=0.9, b2=0.99, inverse_root="eigh", grafting=grafting,
                       graft_bias_correction=bias_correction, precondition_frequency=2, start_preconditioning_step=2)
    outs, _ = _run(tx, grads, params)
    kw = dict(B=8, b1=0.9, b2=0.99, freq=2, t0=2, grafting=grafting)
    # float32 eigh roots of factors with condition numbers up to ~1e4: ~1e-3 relative, carried by the momentum
    assert _max_rel(outs, reference_dash(grads, graft_bc=bias_correction, **kw)) <= (
        1e-8 if DT == jnp.float64 else 5e-3)
    # 1 / sqrt(1 - 0.99^t) is 3.2 to 10 over these steps: the correction is not a no-op on "w"
    assert _max_rel(outs, reference_dash(grads, graft_bc=not bias_correction, **kw), keys=["w"]) > 0.5


def test_graft_bias_correction_must_be_bool():
    with pytest.raises(TypeError, match="graft_bias_correction"):  # jaxtyping's check, or scale_by_dash's
        scale_by_dash(8, graft_bias_correction="no")


@pytest.mark.parametrize("override, exponents, solver", [
    ({2: {1: 0}}, (0.25, 0.0, 0.5), "eigh"),  # rows only
    ({2: {0: 0.5, 1: 0}}, (0.5, 0.0, 0.5), "newton_db"),  # one-sided Shampoo L^{-1/2} G
    ({2: 0.5, 1: 1.0}, (0.5, 0.5, 1.0), "eigh"),  # p = 2 on both sides, p = 1 for vectors
    ({2: {0: 1 / 3}}, (1 / 3, 0.25, 0.5), "coupled_newton"),
])
def test_inverse_exponent_override_matches_numpy(ref_setup, override, exponents, solver):
    # B = 4 and t0 = 5: every factor (4 x 4 matrix sides, and the vectors' 4 x 4 left factors after 5 rank-one
    # steps) is full rank when it is first inverted, so the roots are well determined in float32
    grads, params = ref_setup
    tx = scale_by_dash(4, inverse_root=solver, precondition_frequency=2, start_preconditioning_step=5,
                       one_dim="shampoo", inverse_exponent_override=override)
    outs, _ = _run(tx, grads, params)
    refs = reference_dash(grads, B=4, freq=2, t0=5, one_dim="shampoo", exponents=exponents)
    tol = 1e-8 if DT == jnp.float64 and solver == "eigh" else 2e-3
    assert _max_rel(outs, refs) <= tol
    default = reference_dash(grads, B=4, freq=2, t0=5, one_dim="shampoo")
    assert _max_rel(outs, default, keys=["w"]) > 1e-2  # the override changes the update


def test_inverse_exponent_override_errors():
    for bad, match in (({3: 0.5}, "order"), ({2: {2: 0.5}}, "dim"), ({2: 0.3}, "positive integer"),
                       ({2: -0.25}, ">= 0"), ({2: {0: 1 / 3}}, "NewtonDB")):
        with pytest.raises(ValueError, match=match):
            scale_by_dash(8, inverse_exponent_override=bad)
    with pytest.raises(TypeError, match="inverse_exponent_override"):
        scale_by_dash(8, inverse_exponent_override=0.5)


def test_merged_view_shapes_follow_the_documented_rule():
    from icmlx.optim._blocking import matrix_view_shape, merge_dims

    # written out by hand from scale_by_dash's rule: drop unit dims, merge adjacent dims left to right while
    # the product stays <= B, then split where the longer side is shortest (ties: later split)
    table = [
        ((3, 3, 64, 64), 128, (576, 64)),  # (9, 64, 64) -> (kh*kw*cin, cout)
        ((3, 3, 3, 64), 128, (27, 64)),  # merges straight to two dims
        ((5, 5, 128, 256), 128, (3200, 256)),  # (25, 128, 256)
        ((256, 4, 64), 128, (256, 256)),  # attention kernel
        ((1, 3, 1, 3, 64, 1, 64), 128, (576, 64)),  # unit dims dropped first
        ((4, 4, 8), 128, (16, 8)),  # 128 entries merge to one dim: split the unmerged dims
        ((64, 1, 32), 128, (64, 32)),  # two dims after dropping unit dims: as is
        ((2, 3, 4), 4, (6, 4)),  # (2, 3, 4) unmerged; (6, 4) beats (2, 12)
        ((7,), 128, (7,)),
    ]
    for shape, B, want in table:
        assert matrix_view_shape(shape, B) == want, (shape, B)
        assert _view(shape, B) == want, (shape, B)  # the test's reference applies the same rule
    assert matrix_view_shape((3, 3, 64, 64)) == (3, 12288)  # merge_small_dims=False: (d0, prod(rest))
    # Distributed Shampoo's docstring example (unit dims dropped)
    assert merge_dims((2, 512, 2048, 3, 4), 1024) == (1024, 2048, 12)
    assert merge_dims((2, 768, 2048), 1024) == (2, 768, 2048)
    plan = make_block_plan(((3, 3, 64, 64),), 128, merge_small_dims=True)
    assert plan.leaves[0].view == (576, 64)
    assert sorted((g.r, g.c, g.count) for g in plan.groups) == [(64, 64, 1), (128, 64, 4)]


def test_conv_step_equals_dash_on_the_reshaped_matrix():
    # (3, 3, 8, 16) with B=32: merged (9, 8, 16) -> viewed as (72, 16); DASH on that matrix, built by hand
    conv, mat = (3, 3, 8, 16), (72, 16)
    grads = _grads(6, {"k": conv, "b": (16,)}, 3)
    kw = dict(precondition_frequency=2, inverse_root="eigh")
    outs, _ = _run(scale_by_dash(32, **kw), grads, {"k": jnp.zeros(conv, DT), "b": jnp.zeros(16, DT)})
    flat = [{"k": g["k"].reshape(mat), "b": g["b"]} for g in grads]
    refs, _ = _run(scale_by_dash(32, **kw), flat, {"k": jnp.zeros(mat, DT), "b": jnp.zeros(16, DT)})
    refs = [{"k": np.asarray(r["k"]).reshape(conv), "b": np.asarray(r["b"])} for r in refs]
    assert _max_rel(outs, refs) <= (1e-12 if DT == jnp.float64 else 1e-6)
    # and against the NumPy float64 reference Shampoo with the rule (float32 eigh roots)
    assert _max_rel(outs, reference_dash(grads, B=32, freq=2)) <= (1e-8 if DT == jnp.float64 else 2e-3)
    assert make_block_plan((conv,), 32).leaves[0].view == (3, 384)  # merge_small_dims=False's view


def test_bfloat16_statistics():
    shapes = {"w": (16, 24), "b": (24,)}
    grads = _grads(7, shapes, 6)
    params = {k: jnp.zeros(sh, DT) for k, sh in shapes.items()}
    # no momentum: its buffer would carry step 1's (documented) O(1) root difference into the later steps
    kw = dict(precondition_frequency=2, inverse_root="eigh", momentum=0.0)
    outs, state = _run(scale_by_dash(8, statistics_dtype="bfloat16", **kw), grads, params)
    ref32, state32 = _run(scale_by_dash(8, **kw), grads, params)
    assert all(f.dtype == jnp.bfloat16 for f in state.factors)
    assert all(r.dtype == DT for r in state.roots) and all(f.dtype == DT for f in state32.factors)
    # stated tolerance 1e-2 (measured <= 3e-3) from step 2 on: bfloat16 keeps 8 significant bits, so a factor
    # is resolved down to eigenvalues ~1e-2 of its largest; step 1's one-sample square 8 x 8 blocks have
    # G G^T condition numbers up to ~1e5, whose roots bfloat16 cannot carry (documented)
    assert _max_rel(outs[1:], [jax.tree.map(np.asarray, r) for r in ref32[1:]]) <= 1e-2
    assert _max_rel(outs[1:], reference_dash(grads, B=8, freq=2, mu=0.0)[1:]) <= 1e-2  # float64 NumPy Shampoo
    nbytes = lambda fs: sum(f.size * f.dtype.itemsize for f in fs)  # noqa: E731
    assert nbytes(state32.factors) == (4 if DT == jnp.float64 else 2) * nbytes(state.factors)
    with pytest.warns(UserWarning, match="factor_decay"):
        scale_by_dash(8, statistics_dtype=jnp.bfloat16, factor_decay=1.0)
    with pytest.raises(ValueError, match="statistics_dtype"):
        scale_by_dash(8, statistics_dtype="int8")
    with pytest.raises((TypeError, ValueError), match="merge_small_dims"):  # TypeError: runtime type checks
        scale_by_dash(8, merge_small_dims="yes")


# ---------------------------------------------------------------------------------------------------------
# Contracts
# ---------------------------------------------------------------------------------------------------------


def test_roots_change_only_on_refresh_steps_and_compile_once():
    shapes = {"w": (8, 12)}
    grads = _grads(4, shapes, 8)
    params = {"w": jnp.zeros((8, 12), DT)}
    tx = scale_by_dash(4, precondition_frequency=3, start_preconditioning_step=2)
    state = jax.jit(tx.init)(params)  # committed like the update's outputs, so the cache key is stable
    update = jax.jit(eqx.debug.assert_max_traces(tx.update, max_traces=1))
    changed = []
    for t, g in enumerate(grads, start=1):
        old = [np.asarray(r) for r in state.roots]
        _, state = update({"w": jnp.asarray(g["w"], DT)}, state, params)
        if any(not np.array_equal(o, np.asarray(n)) for o, n in zip(old, state.roots)):
            changed.append(t)
        for a, b in zip(old, state.roots):  # dtype/shape stable
            assert a.shape == b.shape and a.dtype == b.dtype
    assert changed == [2, 3, 6]  # t == t0, then t % f == 0


def test_nonfinite_gradient_skipped_or_raised():
    params = {"w": jnp.zeros((8, 8), DT), "b": jnp.zeros(8, DT)}
    good = {"w": jnp.ones((8, 8), DT), "b": jnp.ones(8, DT)}
    bad = {"w": good["w"].at[0, 0].set(jnp.nan), "b": good["b"]}
    tx = scale_by_dash(4, precondition_frequency=1)
    update = jax.jit(tx.update)
    state = tx.init(params)
    _, state = update(good, state, params)
    u, state2 = update(bad, state, params)
    assert all(np.all(np.asarray(x) == 0) for x in jax.tree.leaves(u))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(state2)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    u, state3 = update(good, state2, params)
    assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves((u, state3)))
    tx_raise = scale_by_dash(4, nonfinite="raise")
    with pytest.raises(Exception, match="non-finite"):
        jax.block_until_ready(jax.jit(tx_raise.update)(bad, tx_raise.init(params), params))


@pytest.mark.parametrize("method", [NewtonDB(), CoupledNewton(), "eigh"])
def test_failed_refresh_keeps_previous_root_and_counts(method):
    # (8, 8) in 4x4 blocks: 4 blocks, one stack of 8 factors (L and R of each block). A gradient so large that
    # G G^T overflows to inf in block (0, 0) only (nonfinite="ignore" lets it through): that block's L and R
    # refreshes fail, so they keep the previous roots; the 6 other factors refresh normally.
    params = {"w": jnp.zeros((8, 8), DT)}
    rng = np.random.default_rng(11)
    g1 = {"w": jnp.asarray(rng.standard_normal((8, 8)), DT)}
    big = float(np.finfo(np.dtype(DT)).max) ** 0.6  # finite, but big**2 overflows
    g2 = {"w": jnp.asarray(rng.standard_normal((8, 8)), DT).at[:4, :4].set(big)}
    tx = scale_by_dash(4, precondition_frequency=1, inverse_root=method, nonfinite="ignore")
    update = jax.jit(tx.update)
    _, s1 = update(g1, tx.init(params), params)
    assert int(s1.root_failures) == 0
    u2, s2 = update(g2, s1, params)
    assert int(s2.root_failures) == 2
    old, new, fac = np.asarray(s1.roots[0]), np.asarray(s2.roots[0]), np.asarray(s2.factors[0], np.float64)
    bad = ~np.all(np.isfinite(fac), axis=(1, 2))
    assert bad.sum() == 2  # the poisoned statistics: block (0, 0)'s L and R
    np.testing.assert_array_equal(new[bad], old[bad])  # kept bit-for-bit
    assert np.all(np.isfinite(new)) and np.all(np.isfinite(np.asarray(u2["w"])))
    # the other factors' roots were refreshed: against float64 eigh of each factor (+ the solver's ridge)
    tol = 2e-2 if method == NewtonDB() else 2e-3  # NDB's 10 fixed steps vs an exact root; f32 rounding
    for f, r in zip(fac[~bad], new[~bad]):
        ref = _np_root(f + 1e-6 * np.linalg.eigvalsh(f).max() * np.eye(4) * (method != "eigh"), 4)
        assert np.abs(r - ref).max() <= tol * np.abs(ref).max()
    # the poison stays in the statistics (an EMA), so every later refresh of those two factors fails too
    _, s3 = update(g1, s2, params)
    assert int(s3.root_failures) == 4
    np.testing.assert_array_equal(np.asarray(s3.roots[0])[bad], old[bad])


def test_zero_gradient_block_finite():
    params = {"w": jnp.zeros((8, 8), DT)}
    g = {"w": jnp.zeros((8, 8), DT).at[:4, :4].set(1.0)}  # three of four 4x4 blocks are exactly zero
    for method in ["newton_db"]:  # all four methods on zero blocks: test_optim_inverse_root.py
        tx = scale_by_dash(4, inverse_root=method, precondition_frequency=1)
        u, state = jax.jit(tx.update)(g, tx.init(params), params)
        assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves((u, state))), method
        assert np.all(np.asarray(u["w"])[4:, :] == 0) and np.all(np.asarray(u["w"])[:, 4:] == 0)


def test_invalid_hyperparameters_raise():
    with pytest.raises(ValueError, match="root_chunk_size"):
        dash(1e-3, root_chunk_size=0)
    for kw in [dict(block_size=0), dict(b1=1.0), dict(b2=-0.1), dict(factor_decay=1.5), dict(momentum=1.0),
               dict(grafting="lion"), dict(inverse_root="svd"), dict(precondition_frequency=0),
               dict(start_preconditioning_step=0), dict(one_dim="sgd"), dict(nonfinite="warn")]:
        with pytest.raises(ValueError):
            scale_by_dash(**kw)
    with pytest.raises(ValueError):
        dash(1e-3, weight_decay=-1.0)


def test_weight_decay_matrices_only():
    params = {"w": jnp.full((4, 4), 2.0, DT), "b": jnp.full((4,), 2.0, DT)}
    g = {"w": jnp.ones((4, 4), DT), "b": jnp.ones((4,), DT)}
    # weight decay as an injected hyperparameter: one compiled update serves both values
    opt = optax.inject_hyperparams(dash, static_args=DASH_STATIC_ARGS)(0.1, block_size=4, weight_decay=0.0)
    state = opt.init(params)
    update = jax.jit(opt.update)
    u0, _ = update(g, state, params)
    state.hyperparams["weight_decay"] = jnp.asarray(0.5, DT)
    u1, _ = update(g, state, params)
    np.testing.assert_allclose(np.asarray(u1["w"] - u0["w"]), -0.1 * 0.5 * 2.0, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(u1["b"] - u0["b"]), 0.0, atol=1e-7)


# ---------------------------------------------------------------------------------------------------------
# optax citizenship
# ---------------------------------------------------------------------------------------------------------


def test_optax_multi_transform_masked_schedule():
    from icmlx.optim import warmup_cosine_decay

    params = {"emb": jnp.ones((10, 4), DT), "w": jnp.ones((4, 4), DT)}
    g = jax.tree.map(lambda p: 0.1 * jnp.arange(p.size, dtype=p.dtype).reshape(p.shape), params)
    # embeddings to Adam, the rest to DASH driven by a schedule from this package; clipping in front
    sched = warmup_cosine_decay(1e-2, warmup_steps=2, decay_steps=10)
    tx = optax.chain(
        optax.clip_by_global_norm(1e3),
        optax.multi_transform({"adam": optax.adam(1e-2), "dash": dash(sched, block_size=4)},
                              {"emb": "adam", "w": "dash"}),
    )
    with jax.numpy_dtype_promotion("standard"):  # optax.adam mixes int32 and float internally
        u, _ = jax.jit(tx.update)(g, tx.init(params), params)
        ua, _ = optax.adam(1e-2).update(g["emb"], optax.adam(1e-2).init(params["emb"]))
    np.testing.assert_allclose(np.asarray(u["emb"]), np.asarray(ua), rtol=1e-6)
    assert np.all(np.isfinite(np.asarray(u["w"])))
    # optax.masked: masked-out leaves pass through untouched, the plan is built from the rest only
    tx = optax.masked(scale_by_dash(4), {"emb": False, "w": True})
    u, _ = jax.jit(tx.update)(g, tx.init(params), params)
    np.testing.assert_array_equal(np.asarray(u["emb"]), np.asarray(g["emb"]))
    assert np.all(np.isfinite(np.asarray(u["w"])))


def test_optax_inject_hyperparams_and_multisteps():
    params = {"w": jnp.ones((4, 4), DT)}
    # a full-rank gradient (cond ~6): with a singular one the factors are singular and NDB amplifies float32
    # rounding differences between two fusions of the same graph far past any dtype-based tolerance
    g = {"w": 0.1 * jnp.arange(16, dtype=DT).reshape(4, 4) + jnp.eye(4, dtype=DT)}
    inj = optax.inject_hyperparams(dash, static_args=DASH_STATIC_ARGS)(learning_rate=1e-2, block_size=4)
    ui, si = jax.jit(inj.update)(g, inj.init(params), params)
    plain = dash(1e-2, block_size=4)
    up, _ = jax.jit(plain.update)(g, plain.init(params), params)
    # same graph up to the hyperparameters being arrays (XLA may fuse differently: float32 rounding)
    np.testing.assert_allclose(np.asarray(ui["w"]), np.asarray(up["w"]), rtol=1e-4, atol=1e-7)
    assert float(si.hyperparams["learning_rate"]) == pytest.approx(1e-2)
    # MultiSteps: the first of two micro-steps emits a zero update
    ms = optax.MultiSteps(plain, every_k_schedule=2)
    s = ms.init(params)
    with jax.numpy_dtype_promotion("standard"):  # MultiSteps divides a float by an int32 internally
        ms_update = jax.jit(ms.update)
        u1, s = ms_update(g, s, params)
        u2, s = ms_update(g, s, params)
    assert np.all(np.asarray(u1["w"]) == 0) and np.any(np.asarray(u2["w"]) != 0)


def test_checkpoint_roundtrip_exact():
    params = {"w": jnp.ones((8, 12), DT), "b": jnp.zeros(12, DT)}
    grads = _grads(5, {"w": (8, 12), "b": (12,)}, 4)
    opt = dash(1e-2, block_size=4, precondition_frequency=2, momentum=0.5)
    update = jax.jit(opt.update)
    state = opt.init(params)
    for g in grads[:3]:
        _, state = update(jax.tree.map(lambda x: jnp.asarray(x, DT), g), state, params)
    leaves, treedef = jax.tree.flatten(state)
    buf = io.BytesIO()
    np.savez(buf, *[np.asarray(x) for x in leaves])
    buf.seek(0)
    loaded = np.load(buf)
    restored = jax.tree.unflatten(treedef, [jnp.asarray(loaded[f"arr_{i}"]) for i in range(len(leaves))])
    g = jax.tree.map(lambda x: jnp.asarray(x, DT), grads[3])
    u1, s1 = update(g, state, params)
    u2, s2 = update(g, restored, params)
    for a, b in zip(jax.tree.leaves((u1, s1)), jax.tree.leaves((u2, s2))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_sharded_equals_unsharded():
    if jax.device_count() < 4:
        pytest.skip("needs 4 (fake) devices")
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("blocks",))
    params = {"w": jnp.zeros((24, 20), DT)}  # ragged: (8,8) x6, (8,4) x3 blocks -> stacks of 15 and 3
    grads = _grads(6, {"w": (24, 20)}, 2)
    tx1 = scale_by_dash(8, precondition_frequency=1)
    # refresh inside shard_map, with explicit chunks in each device's share (the big stack: 15 blocks padded
    # to 16, 4 per device, two chunks of 2; the default "auto" gives one chunk per share at B=8)
    tx4 = scale_by_dash(8, precondition_frequency=1, mesh=mesh, mesh_axis="blocks", root_chunk_size=2)
    o1, s1 = _run(tx1, grads, params)
    o4, s4 = _run(tx4, grads, params)
    for step, (a, b) in enumerate(zip(o1, o4)):
        for k in a:
            # same maths per block; sharded and per-chunk matmuls may pick other float32 kernels. At step 0 the
            # factors are rank 1 (singular up to the ridge), and NDB amplifies that rounding on the update's
            # smallest entries (seen up to ~5e-5 of its scale, CPU-dependent): compare step 0 normwise only
            ref, got = np.asarray(a[k]), np.asarray(b[k])
            scale = float(np.abs(ref).max())
            assert float(np.abs(got - ref).max()) <= 2e-4 * scale, (step, k)
            if step > 0:
                np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-5 * scale)
    assert int(s1.root_failures) == int(s4.root_failures) == 0
    # the stacks really are split over the 4 devices (padded to a multiple of 4)
    for r in s4.roots:
        assert r.shape[0] % 4 == 0
        assert len(r.sharding.device_set) == 4
        assert r.addressable_shards[0].data.shape[0] == r.shape[0] // 4


def test_dash_beats_adam_on_ill_conditioned_regression():
    # min ||A W B - C||^2 with kappa(A), kappa(B) ~ 1e2: Shampoo's Kronecker preconditioner whitens both sides.
    rng = np.random.default_rng(7)

    def illcond(n, kappa):
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        return (q * np.logspace(0, -np.log10(kappa), n)) @ q.T

    A, Bm = jnp.asarray(illcond(16, 1e2), DT), jnp.asarray(illcond(12, 1e2), DT)
    W_true = jnp.asarray(rng.standard_normal((16, 12)), DT)
    C = A @ W_true @ Bm

    def loss(w):
        return jnp.sum((A @ w @ Bm - C) ** 2)

    def make_train(make_opt, steps=150):
        @jax.jit
        def train(lr):  # the learning rate is traced: one compile per optimizer for the whole grid
            opt = make_opt(lr)
            w = jnp.zeros((16, 12), DT)

            def body(carry, _):
                w, s = carry
                u, s = opt.update(jax.grad(loss)(w), s, w)
                return (optax.apply_updates(w, u), s), None

            (w, _), _ = jax.lax.scan(body, (w, opt.init(w)), None, length=steps)
            return loss(w)

        return train

    # DASH's momentum (0.9) puts its best learning rates about 10x below Adam's: one grid covering both
    grid = [jnp.asarray(lr, DT) for lr in (3e-3, 1e-2, 3e-2, 1e-1)]
    with jax.numpy_dtype_promotion("standard"):  # optax.adam mixes int32 and float internally
        train_adam = make_train(optax.adam)
        best_adam = min(float(train_adam(lr)) for lr in grid)
    train_dash = make_train(lambda lr: dash(lr, block_size=16, precondition_frequency=5))
    best_dash = min(float(train_dash(lr)) for lr in grid)
    assert best_dash < best_adam, (best_dash, best_adam)


# ---------------------------------------------------------------------------------------------------------
# solver objects and the deprecated flag-style arguments
# ---------------------------------------------------------------------------------------------------------


def test_removed_root_flags_are_errors():
    # the flag-style solver settings of the first release are gone: the solver object carries them
    for kw in (dict(newton_steps=14), dict(chebyshev_degree=30), dict(root_relative_epsilon=1e-4),
               dict(scaling="frobenius"), dict(matmul_dtype=jnp.bfloat16)):
        with pytest.raises(TypeError, match=next(iter(kw))):
            scale_by_dash(4, **kw)
        with pytest.raises(TypeError, match=next(iter(kw))):
            dash(1e-2, block_size=4, **kw)


def test_string_hyperparameters_are_type_errors():
    for kw, name in ((dict(learning_rate="1e-3"), "learning_rate"), (dict(learning_rate=1e-3, b1="0.9"), "b1"),
                     (dict(learning_rate=1e-3, factor_decay="0.9"), "factor_decay"),
                     (dict(learning_rate=1e-3, weight_decay="0"), "weight_decay"),
                     (dict(learning_rate=1e-3, eps=None), "eps")):
        with pytest.raises(TypeError, match=name):
            dash(**kw)
    with pytest.raises(TypeError, match="b2"):
        scale_by_dash(4, b2="0.95")


def test_solver_object_under_inject_hyperparams():
    # the solver object is static configuration: inject_hyperparams neither injects nor schedules it
    params = {"w": jnp.ones((4, 4), DT)}
    # a full-rank gradient (cond ~6): with a singular one the factors are singular and NDB amplifies float32
    # rounding differences between two fusions of the same graph far past any dtype-based tolerance
    g = {"w": 0.1 * jnp.arange(16, dtype=DT).reshape(4, 4) + jnp.eye(4, dtype=DT)}
    solver = Chebyshev(degree=24)
    inj = optax.inject_hyperparams(dash, static_args=DASH_STATIC_ARGS)(
        learning_rate=1e-2, block_size=4, inverse_root=solver)
    state = inj.init(params)
    assert "inverse_root" not in state.hyperparams
    ui, _ = jax.jit(inj.update)(g, state, params)
    plain = dash(1e-2, block_size=4, inverse_root=solver)
    up, _ = jax.jit(plain.update)(g, plain.init(params), params)
    np.testing.assert_allclose(np.asarray(ui["w"]), np.asarray(up["w"]), rtol=1e-4, atol=1e-7)
