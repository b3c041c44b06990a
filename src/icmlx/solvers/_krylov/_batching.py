"""How a Krylov loop meets ``vmap``: one batch member at a time inside the compiled program."""

from typing import Any

import jax

__all__: list[str] = []


def one_at_a_time(loop: Any, mv: Any, M: Any, b, x, rtol, atol, static: tuple, max_steps: int, show: bool):
    """``loop(mv, M, b, x, ...)``, which under ``vmap`` runs once per batch member inside the compiled program
    (`jax.custom_batching.sequential_vmap`) instead of as one batched loop: a batched ``while_loop`` runs every
    member to the slowest one's count and selects between the old and new carry on every step, and its
    preconditioner and products on stacked vectors were measured slower than solving the members in turn (a
    Python loop over the right-hand sides, less its dispatch and host syncs, is the result)."""
    def solve_one(b, x, rtol, atol):
        return loop(mv, M, b, x, rtol, atol, *static, max_steps, show)

    # the operator and preconditioner may be closures over traced arrays (custom_linear_solve's products): traced
    # once to a jaxpr, their arrays become arguments of the sequential map rather than captured values
    closed, shape = jax.make_jaxpr(solve_one, return_shape=True)(b, x, rtol, atol)
    out_tree = jax.tree_util.tree_structure(shape)

    def run(consts, b, x, rtol, atol):
        out = jax.core.eval_jaxpr(closed.jaxpr, consts, *jax.tree_util.tree_leaves((b, x, rtol, atol)))
        return jax.tree_util.tree_unflatten(out_tree, out)

    return jax.custom_batching.sequential_vmap(run)(list(closed.consts), b, x, rtol, atol)
