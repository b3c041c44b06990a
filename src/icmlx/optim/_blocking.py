"""Static block partition of a parameter tree into stacked same-shaped blocks (the DASH 3-D layout).

A *plan* is computed in pure Python from leaf shapes only (so it is identical in ``init`` and every ``update``
trace). Each preconditioned leaf is viewed as a matrix, cut into ``B x B`` blocks row-major over the block grid,
with ragged right/bottom edges kept as their own smaller blocks (no padding of gradients). Blocks of equal shape
from all leaves are concatenated into one ``(N, r, c)`` array (a *group*); their left and right Kronecker factors
go into one ``(N_z, z, z)`` stack per ``(z, root)`` so each inverse-root solve is one batched call per size.
"""

import functools
import math
from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, Float

__all__ = ["BlockPlan", "make_block_plan", "blockify", "unblockify", "matrix_view_shape", "merge_dims"]

ADAM, MATRIX, VECTOR = "adam", "matrix", "vector"


class Piece(NamedTuple):
    """One rectangular tiling of a leaf: ``nr x nc`` blocks of shape ``r x c`` starting at (row0, col0)."""

    r: int
    c: int
    nr: int
    nc: int
    row0: int
    col0: int


class LeafPlan(NamedTuple):
    kind: str  # "adam", "matrix" or "vector"
    shape: tuple[int, ...]  # original shape
    view: tuple[int, int]  # 2-D view (vectors: (E, 1))
    pieces: tuple[Piece, ...]


class Group(NamedTuple):
    """All blocks of one shape: (kind, r, c), total count, and where their factors sit in the stacks."""

    kind: str
    r: int
    c: int
    count: int
    left_stack: int  # index into BlockPlan.stacks
    left_offset: int
    right_stack: int  # -1 for vectors (no right factor)
    right_offset: int


class BlockPlan(NamedTuple):
    """Static description of the stacked layout (hashable, pure Python)."""

    leaves: tuple[LeafPlan, ...]
    groups: tuple[Group, ...]
    #: one entry per factor stack: (z, root, n_real, n_padded)
    stacks: tuple[tuple[int, int, int, int], ...]
    #: for every stack, the ordered contributions (group index, side) with side "L" or "R"
    contributions: tuple[tuple[tuple[int, str], ...], ...]


def merge_dims(shape: tuple[int, ...], max_dim: int) -> tuple[int, ...]:
    """Distributed Shampoo's ``merge_small_dims``: fuse adjacent dims while their product stays <= ``max_dim``.

    ``(2, 512, 2048, 3, 4)`` with ``max_dim=1024`` gives ``(1024, 2048, 12)``; unit dims vanish.
    """
    out: list[int] = []
    product = 1
    for d in shape:
        if product * d <= max_dim:
            product *= d
        else:
            if product > 1:
                out.append(product)
            product = d
    if product > 1:
        out.append(product)
    return tuple(out)


def _balanced_split(dims: tuple[int, ...]) -> tuple[int, int]:
    """``(prod(dims[:k]), prod(dims[k:]))`` at the ``k`` that makes the longer side shortest (ties: larger k)."""
    k = min(range(1, len(dims)), key=lambda k: (max(math.prod(dims[:k]), math.prod(dims[k:])), -k))
    return math.prod(dims[:k]), math.prod(dims[k:])


def matrix_view_shape(shape: tuple[int, ...], merge_block: int | None = None) -> tuple[int, ...]:
    """The 2-D view of a leaf: unit dims dropped, then >=3-D leaves viewed as a matrix.

    With ``merge_block=None``, a >=3-D leaf is ``(d0, prod(rest))`` (the DASH paper's reshape). With
    ``merge_block=B`` (DASH's ``merge_small_dims=True``): adjacent dims are first merged left to right while
    their product stays ``<= B`` (`merge_dims`); if more than two dims remain, they are split into
    ``(prod(leading), prod(trailing))`` where the longer side is shortest, ties to the later split (so a conv
    kernel ``(kh, kw, cin, cout)`` becomes ``(kh*kw*cin, cout)``); if merging left one dim (the whole leaf has
    at most ``B`` entries), that split is made over the unmerged dims, so the leaf stays a matrix. 1-D and
    2-D views (after dropping unit dims) are returned as they are.
    """
    sq = tuple(d for d in shape if d != 1)
    if len(sq) < 3:
        return sq
    if merge_block is None:
        return (sq[0], math.prod(sq[1:]))
    merged = merge_dims(sq, merge_block)
    if len(merged) == 2:
        return merged
    return _balanced_split(merged if len(merged) > 2 else sq)


def _splits(m: int, b: int) -> list[tuple[int, int, int]]:
    """(size, count, offset) runs: full blocks then the remainder."""
    out = []
    nf, rem = divmod(m, b)
    if nf:
        out.append((b, nf, 0))
    if rem:
        out.append((rem, 1, nf * b))
    return out


@functools.lru_cache(maxsize=256)
def make_block_plan(
    shapes: tuple[tuple[int, ...], ...],
    block_size: int,
    one_dim: str = "adam",
    num_shards: int = 1,
    max_dim: int | None = None,
    merge_small_dims: bool = False,
    roots: tuple[int, int, int] = (4, 4, 2),
) -> BlockPlan:
    """Build the static plan for leaves with the given shapes.

    Args:
      shapes: leaf shapes in tree order.
      block_size: maximal block side ``B``.
      one_dim: ``"adam"`` routes squeezed 1-D leaves to Adam; ``"shampoo"`` preconditions them with
        stacked ``(B, 1)`` blocks and a left factor only (root 2).
      num_shards: pad every factor stack to a multiple of this (for sharding over a mesh axis).
      max_dim: leaves whose (viewed) side exceeds this go to Adam (the diagonal fallback); ``None``: no limit.
      merge_small_dims: view >=3-D leaves by `matrix_view_shape`'s merge rule with ``merge_block =
        block_size`` (``False``: the ``(d0, prod(rest))`` view).
      roots: the inverse root ``p`` of a matrix block's left and right factors and of a vector block's factor;
        ``0`` leaves that side unpreconditioned (no factor: its stack index is ``-1``).

    Returns:
      The `BlockPlan`.
    """
    leaves = []
    group_index: dict[tuple[str, int, int], int] = {}
    group_counts: list[int] = []
    group_keys: list[tuple[str, int, int]] = []
    for shape in shapes:
        view = matrix_view_shape(tuple(shape), block_size if merge_small_dims else None)
        if any(d == 0 for d in shape):  # an empty leaf has no blocks: Adam's (empty) update is the no-op
            view = ()
        if max_dim is not None and any(d > max_dim for d in view):
            view = ()  # too long a side for Kronecker factors: the diagonal (Adam) update
        if len(view) == 2:
            kind = MATRIX
            m, n = view
            rows, cols = _splits(m, block_size), _splits(n, block_size)
        elif len(view) == 1 and one_dim == "shampoo":
            kind = VECTOR
            m, n = view[0], 1
            view = (m, 1)
            rows, cols = _splits(m, block_size), [(1, 1, 0)]
        else:
            leaves.append(LeafPlan(ADAM, tuple(shape), (0, 0), ()))
            continue
        pieces = []
        for r, nr, row0 in rows:
            for c, nc, col0 in cols:
                pieces.append(Piece(r, c, nr, nc, row0, col0))
                key = (kind, r, c)
                if key not in group_index:
                    group_index[key] = len(group_keys)
                    group_keys.append(key)
                    group_counts.append(0)
                group_counts[group_index[key]] += nr * nc
        leaves.append(LeafPlan(kind, tuple(shape), (m, n), tuple(pieces)))

    stack_index: dict[tuple[int, int], int] = {}
    stack_sizes: list[int] = []
    stack_keys: list[tuple[int, int]] = []
    contributions: list[list[tuple[int, str]]] = []

    def _add(z: int, root: int, count: int, gi: int, side: str) -> tuple[int, int]:
        key = (z, root)
        if key not in stack_index:
            stack_index[key] = len(stack_keys)
            stack_keys.append(key)
            stack_sizes.append(0)
            contributions.append([])
        si = stack_index[key]
        off = stack_sizes[si]
        stack_sizes[si] += count
        contributions[si].append((gi, side))
        return si, off

    groups = []
    for gi, (kind, r, c) in enumerate(group_keys):
        count = group_counts[gi]
        left_root, right_root = roots[:2] if kind == MATRIX else (roots[2], 0)
        ls, lo = _add(r, left_root, count, gi, "L") if left_root else (-1, 0)
        rs, ro = _add(c, right_root, count, gi, "R") if right_root else (-1, 0)
        groups.append(Group(kind, r, c, count, ls, lo, rs, ro))

    stacks = tuple(
        (z, root, n, -(-n // num_shards) * num_shards) for (z, root), n in zip(stack_keys, stack_sizes)
    )
    return BlockPlan(tuple(leaves), tuple(groups), stacks, tuple(tuple(c) for c in contributions))


def _leaf_pieces(x: Array, leaf: LeafPlan) -> list[Array]:
    g = x.reshape(leaf.view)
    out = []
    for pc in leaf.pieces:
        sub = g[pc.row0 : pc.row0 + pc.nr * pc.r, pc.col0 : pc.col0 + pc.nc * pc.c]
        sub = sub.reshape(pc.nr, pc.r, pc.nc, pc.c).transpose(0, 2, 1, 3)
        out.append(sub.reshape(pc.nr * pc.nc, pc.r, pc.c))
    return out


def blockify(plan: BlockPlan, leaves: list[Array], dtype=None) -> list[Float[Array, "N r c"]]:
    """Cut the preconditioned leaves into blocks and stack them per group.

    Args:
      plan: the static plan.
      leaves: arrays in tree order (Adam-routed leaves are ignored).
      dtype: cast blocks to this dtype (default: keep).

    Returns:
      One ``(N, r, c)`` array per group, in ``plan.groups`` order.
    """
    per_group: list[list[Array]] = [[] for _ in plan.groups]
    index = {(g.kind, g.r, g.c): i for i, g in enumerate(plan.groups)}
    for x, leaf in zip(leaves, plan.leaves):
        if leaf.kind == ADAM:
            continue
        if dtype is not None:
            x = x.astype(dtype)
        for pc, blocks in zip(leaf.pieces, _leaf_pieces(x, leaf)):
            per_group[index[(leaf.kind, pc.r, pc.c)]].append(blocks)
    return [parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=0) for parts in per_group]


def unblockify(plan: BlockPlan, groups: list[Array], like: list[Array]) -> list[Array]:
    """Inverse of `blockify`: reassemble leaves (Adam-routed leaves are taken from ``like``).

    Args:
      plan: the static plan.
      groups: one ``(N, r, c)`` array per group.
      like: leaves in tree order; Adam-routed ones are returned as given, and dtypes are taken from them.

    Returns:
      The leaves in tree order, original shapes and dtypes.
    """
    index = {(g.kind, g.r, g.c): i for i, g in enumerate(plan.groups)}
    cursor = [0] * len(plan.groups)
    out = []
    for x, leaf in zip(like, plan.leaves):
        if leaf.kind == ADAM:
            out.append(x)
            continue
        tiles = {}
        for pc in leaf.pieces:
            gi = index[(leaf.kind, pc.r, pc.c)]
            n = pc.nr * pc.nc
            blocks = groups[gi][cursor[gi] : cursor[gi] + n]
            cursor[gi] += n
            tile = blocks.reshape(pc.nr, pc.nc, pc.r, pc.c).transpose(0, 2, 1, 3)
            tiles[(pc.row0, pc.col0)] = tile.reshape(pc.nr * pc.r, pc.nc * pc.c)
        row_starts = sorted({k[0] for k in tiles})
        rows = []
        for r0 in row_starts:
            cols = [tiles[k] for k in sorted(k for k in tiles if k[0] == r0)]
            rows.append(cols[0] if len(cols) == 1 else jnp.concatenate(cols, axis=1))
        mat = rows[0] if len(rows) == 1 else jnp.concatenate(rows, axis=0)
        out.append(mat.reshape(leaf.shape).astype(x.dtype))
    return out
