"""Prepared CI tests: what a CI-test object's ``prepare`` returns, and what `icmlx.structure.pc` calls.

A prepared test evaluates one level's batch of tests ``(x, y, S)`` (host int64 arrays ``(m,)``, ``(m,)``,
``(m, k)``, one ``k`` per call) and returns their p-values as a float64 NumPy array. The batches are cut and padded
here, to a few sizes per kernel, so that a level compiles a handful of programs whatever its number of tests; each
tester supplies only its kernel (`_BatchedTest._kernel`) and how its padding works.
"""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..._buckets import round_up, size_bucket

__all__: list[str] = []


def _pad_dim(d: int) -> int:
    """``d`` rounded up to a multiple of 16 (at least 16): similar sizes share one compilation."""
    return round_up(d, 16)


def _bucket(m: int, cap: int, lo: int = 64) -> int:
    return size_bucket(m, minimum=lo, growth=4, maximum=cap)


def _pow2_cap(budget: int, per_test: int, max_batch: int) -> int:
    """Largest power of two (>= 16, <= ``max_batch``) of tests whose working sets fit ``budget`` elements."""
    return min(max(16, 1 << int(math.log2(max(budget // max(per_test, 1), 16)))), max_batch)


def _to_host(p) -> np.ndarray:
    """A kernel's output as a NumPy array. Over a mesh that spans several processes (``jax.distributed``) each
    process holds only its own shards, so every process gathers the whole batch: a collective, which all
    processes reach because they make the same calls on the same data."""
    if isinstance(p, jax.Array) and not p.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(p, tiled=True))
    return np.asarray(p)


class _BatchedTest:
    """A CI test bound to its data: ``pvalues(x, y, s)`` evaluates a batch of one conditioning-set size.

    Subclasses set ``per_test`` (working-set elements of one test, which caps the batch), and implement
    `_kernel`. ``pad_sets``: conditioning sets are padded to a multiple of 4 columns with the true size
    passed to the kernel (so the levels up to that width share one compilation); ``lo``: the smallest batch
    bucket; ``fixed_batch``: every call uses the largest batch (the kernel's cost follows its traced count of
    real tests, so one size serves every level).
    """

    per_test: int = 1
    pad_sets: bool = False
    lo: int = 64
    fixed_batch: bool = False

    def __init__(self, mesh=None, max_batch: int = 8192):
        self.mesh = mesh
        self.max_batch = int(max_batch)

    def _kernel(self, xs, ys, ss, kk, plan, m):
        """p-values (device array) of a padded batch; ``kk`` is the true set size (``pad_sets``) or ``None``,
        ``plan`` the batch's plan (testers that group their tests) and ``m`` the number of real tests."""
        raise NotImplementedError

    def _cap(self, plan=None) -> int:
        return _pow2_cap(2**24, self.per_test, self.max_batch)

    def pvalues(self, x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
        return np.concatenate([_to_host(p)[:m] for p, m in self._dispatch(x, y, s)]).astype(np.float64)

    def _batch_size(self, m: int, plan) -> int:
        if self.fixed_batch and self.mesh is None:
            return self._cap(plan)
        return _bucket(m, self._cap(plan), self.lo)

    def _dispatch(self, x, y, s, plan=None) -> list:
        """Launch the kernel calls of a batch (asynchronously); returns ``[(p_device, n_valid), ...]``."""
        m, k = s.shape
        kk = None
        if self.pad_sets and self._pads(k):
            kb = round_up(k, 4)
            s = np.concatenate([s, np.zeros((m, kb - k), s.dtype)], axis=1)
            kk = np.int32(k)
        b = self._batch_size(m, plan)
        if self.mesh is not None:
            nd = self.mesh.size
            b = ((b + nd - 1) // nd) * nd
        out = []
        for start in range(0, m, b):
            stop = min(start + b, m)
            pad = b - (stop - start)
            xs = np.concatenate([x[start:stop], np.repeat(x[start:start + 1], pad)])
            ys = np.concatenate([y[start:stop], np.repeat(y[start:start + 1], pad)])
            ss = np.concatenate([s[start:stop], np.repeat(s[start:start + 1], pad, axis=0)])
            xs, ys, ss = (a.astype(np.int32) for a in (xs, ys, ss))  # NumPy in: no eager device conversion ops
            if self.mesh is not None:
                from jax.sharding import NamedSharding, PartitionSpec

                axis = self.mesh.axis_names[0]
                sh1 = NamedSharding(self.mesh, PartitionSpec(axis))
                sh2 = NamedSharding(self.mesh, PartitionSpec(axis, None))
                xs, ys, ss = jax.device_put(xs, sh1), jax.device_put(ys, sh1), jax.device_put(ss, sh2)
            out.append((self._kernel(xs, ys, ss, kk, plan, stop - start), stop - start))
        return out

    def _pads(self, k: int) -> bool:
        return True


def _user_vmapped(fn):
    """``fn(data, x, y, S) -> p`` vmapped over a batch of tests and jitted (compiled per set size and batch)."""
    return jax.jit(jax.vmap(fn, in_axes=(None, 0, 0, 0)))


_VMAPPED: dict = {}


def _vmapped_cache(fn):
    """`_user_vmapped` once per function object, so that later runs with the same function (bootstrap
    resamples, a second ``pc`` call) reuse its compiled programs; unhashable callables get a fresh one."""
    try:
        if fn not in _VMAPPED:
            if len(_VMAPPED) > 64:
                _VMAPPED.clear()
            _VMAPPED[fn] = _user_vmapped(fn)
        return _VMAPPED[fn]
    except TypeError:
        return _user_vmapped(fn)


class _FunctionTest(_BatchedTest):
    """A CI test given as a function ``fn(data, x, y, S) -> p_value``.

    If JAX can trace it, each batch is one compiled ``vmap`` of ``fn`` (compiled once per set size and batch
    bucket); otherwise it is called test by test from Python, with concrete NumPy arguments, and a warning says
    so. ``data`` is passed to ``fn`` as an argument, not captured, so a new sample of the same shape compiles
    nothing.
    """

    lo = 64

    def __init__(self, fn, data: np.ndarray, *, mesh=None, max_batch: int = 8192, label: str = "ci_test"):
        super().__init__(None, max_batch)  # the user's function decides its own sharding
        self.fn = fn
        self.label = label
        self.host = np.asarray(data)
        self.data = jax.device_put(self.host)
        self.n = self.host.shape[0]
        self.traced_k: dict[int, bool] = {}
        self.vmapped = _vmapped_cache(fn)
        self.warned = False

    def _traceable(self, k: int) -> bool:
        if k in self.traced_k:
            return self.traced_k[k]
        i32 = jax.ShapeDtypeStruct((), jnp.int32)
        spec = (jax.ShapeDtypeStruct(self.data.shape, self.data.dtype), i32, i32, jax.ShapeDtypeStruct((k,), jnp.int32))
        try:
            out = jax.eval_shape(self.fn, *spec)
        except Exception as err:  # noqa: BLE001 - any failure to trace means: call it from Python
            if not self.warned:
                warnings.warn(
                    f"{self.label}: JAX could not trace the CI-test function ({type(err).__name__}: "
                    f"{str(err).splitlines()[0][:200] if str(err) else ''}); it is called once per test from "
                    "Python, with NumPy arguments, which is much slower than one vmapped batch. Write it with "
                    "jax.numpy and no Python branching on data values to batch it.",
                    UserWarning,
                    stacklevel=4,
                )
                self.warned = True
            self.traced_k[k] = False
            return False
        if getattr(out, "shape", None) != ():
            raise TypeError(f"{self.label}: the CI-test function must return one scalar p-value per test, got "
                            f"{out!r} for a test with |S|={k}")
        self.traced_k[k] = True
        return True

    def _cap(self, plan=None) -> int:
        return _pow2_cap(2**25, self.n * 8, self.max_batch)

    def _kernel(self, xs, ys, ss, kk, plan, m):
        return self.vmapped(self.data, xs, ys, ss)

    def pvalues(self, x, y, s) -> np.ndarray:
        k = s.shape[1]
        if self._traceable(k):
            p = super().pvalues(x, y, s)
        else:
            p = np.asarray([float(self.fn(self.host, int(a), int(b), np.asarray(c, np.int64)))
                            for a, b, c in zip(x.tolist(), y.tolist(), s)], dtype=np.float64)
        bad = ~((p >= 0.0) & (p <= 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{self.label}: the CI-test function returned p={p[i]!r} for x={int(x[i])}, "
                             f"y={int(y[i])}, S={s[i].tolist()}; p-values must lie in [0, 1]")
        return p
