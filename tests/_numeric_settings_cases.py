"""Calls of every public function that takes numeric settings, with a string where one number belongs.

Run as a script (``python tests/_numeric_settings_cases.py``), it prints one JSON line per case:
``{"case": "icmlx.stats.benjamini_hochberg(alpha)", "outcome": "TypeError" | "other error" | "accepted",
"names_argument": bool, "message": ...}``. ``tests/test_numeric_settings.py`` runs it in a fresh interpreter, so
the calls meet the library as a user does (no runtime type-checking import hook, which would raise a
``TypeError`` of its own for an annotated argument and hide what the library does).

The cases are found, not listed by hand: every public callable of each subpackage whose signature has a
parameter with a numeric default, or a required parameter annotated as a number, gets one case per such
parameter, with the other required arguments taken from ``VALUES`` by name (small, valid inputs). A callable whose
required arguments are not all in ``VALUES`` is reported as ``"skipped"`` with the missing names, so a new public
function shows up in the test's list of uncovered functions.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import typing

os.environ.setdefault("ICMLX_CACHE", "0")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

SUBPACKAGES = ("optim", "stats", "structure", "sde", "solvers")
# Not settings (a string is an accepted value there), or arguments whose numbers are data, not settings.
NOT_SETTINGS = {"method", "heuristic", "grafting", "nonfinite", "dtype", "rule", "ci_test", "kind", "shape",
                "ax", "labels", "color", "cmap", "x", "y", "s", "x0", "data", "pvalues", "observations", "ts",
                "points", "A", "b", "r", "key", "dag", "starts", "ends", "taus", "centers", "table", "params"}
STRING = {int: "3", float: "0.5"}
# Numeric settings the signature scan cannot see (the annotation also admits a schedule callable).
EXTRA = [("optim", "dash", "learning_rate", float)]
# Arguments that one function needs in another form than ``VALUES`` holds.
OVERRIDES = {"icmlx.sde.geodesic_targets": lambda v: {"observations": v["observations"][None]},
             "icmlx.sde.observation_metric": lambda v: {"x": v["observations"][0]},
             "icmlx.optim.matrix_inverse_root": lambda v: {"p": 2}}


def _poisson(m: int = 4) -> np.ndarray:
    t = 2 * np.eye(m) - np.eye(m, k=1) - np.eye(m, k=-1)
    return np.kron(t, np.eye(m)) + np.kron(np.eye(m), t)


def _values() -> dict:
    from icmlx.sde import RBFBasis, van_der_pol_drift

    rng = np.random.default_rng(0)
    obs = np.cumsum(rng.normal(size=(40, 2)) * 0.3, axis=0).astype(np.float32)
    dag = np.zeros((4, 4), bool)
    dag[0, 1] = dag[1, 2] = dag[1, 3] = True
    return {
        # shared
        "key": jax.random.key(0), "n": 64, "d": 4,
        # stats
        "pvalues": np.array([0.001, 0.2, 0.5, 0.03], np.float32),
        "x": rng.normal(size=32).astype(np.float32), "p": 0.1, "tau2": 4.0, "tau": 0.5, "gamma2": 4.0, "c2": 4.0,
        "alpha": 0.05,
        # structure
        "data": rng.normal(size=(200, 3)).astype(np.float32), "dag": dag,
        # sde
        "observations": obs, "ts": np.arange(40, dtype=np.float32) * 0.5, "sigma": 0.5,
        "points": obs, "num_per_dim": 4, "num_time_steps": 4, "drift": van_der_pol_drift(),
        "f_true": van_der_pol_drift(), "f_est": van_der_pol_drift(), "x0": np.zeros(2, np.float32), "t1": 1.0,
        "dt": 0.1, "centers": obs[:5], "basis": RBFBasis(obs[:5]),
        "starts": obs[:3], "ends": obs[1:4], "taus": np.full(3, 0.5, np.float32),
        # solvers
        "A": _poisson(), "b": np.ones(16, np.float32), "r": np.ones(16, np.float32), "lambda_max": 8.0,
        # optim
        "learning_rate": 1e-3, "init_value": 1.0, "peak_value": 1.0, "decay_steps": 100, "warmup_steps": 10,
        "total_steps": 100, "value": 1.0,
    }


def _is_number(annotation) -> type | None:
    """``int`` or ``float`` when a parameter's annotation admits a number and no string."""
    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else repr(annotation)
    if "str" in text or "Callable" in text:
        return None
    if annotation is int or text in ("int", "int | None"):
        return int
    if annotation is float or "float" in text:
        return float
    return None


def cases():
    import importlib

    for sub in SUBPACKAGES:
        module = importlib.import_module(f"icmlx.{sub}")
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or name.startswith("plot_") or isinstance(obj, type) and issubclass(obj, tuple):
                continue
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            try:
                hints = typing.get_type_hints(obj.__init__ if isinstance(obj, type) else obj)
            except Exception:
                hints = {}
            for param in sig.parameters.values():
                if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in NOT_SETTINGS:
                    continue
                annotation = hints.get(param.name, param.annotation)
                text = annotation if isinstance(annotation, str) else repr(annotation)
                if "str" in text or "Literal" in text or "AbstractSigma" in text:  # a string is a valid value here
                    continue
                default = param.default
                if default is not param.empty and not isinstance(default, bool) and isinstance(default, (int, float)):
                    kind = type(default)
                elif default is param.empty or default is None:
                    kind = _is_number(annotation)
                else:
                    kind = None
                if kind is not None:
                    yield f"icmlx.{sub}.{name}", obj, sig, param.name, kind
    for sub, name, arg, kind in EXTRA:
        obj = getattr(importlib.import_module(f"icmlx.{sub}"), name)
        yield f"icmlx.{sub}.{name}", obj, inspect.signature(obj), arg, kind


def run_case(values, qualname, obj, sig, arg, kind) -> dict:
    required = [p.name for p in sig.parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != arg]
    missing = [r for r in required if r not in values]
    case = f"{qualname}({arg})"
    if missing:
        return {"case": case, "outcome": "skipped", "missing": missing}
    kwargs = {r: values[r] for r in required}
    if qualname in OVERRIDES:
        kwargs.update({k: v for k, v in OVERRIDES[qualname](values).items() if k in kwargs})
    kwargs[arg] = STRING[kind]
    try:
        out = obj(**kwargs)
        if callable(out) and hasattr(out, "update") and hasattr(out, "init"):  # an optax transformation
            params = {"w": np.ones((4, 4), np.float32)}
            out.update(params, out.init(params), params)
        jax.block_until_ready(out) if isinstance(out, jax.Array) else None
    except TypeError as err:
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        return {"case": case, "outcome": "TypeError", "names_argument": arg in str(err), "message": msg[:300]}
    except Exception as err:  # noqa: BLE001 - the outcome is the point
        return {"case": case, "outcome": "other error", "names_argument": arg in str(err),
                "message": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]}
    return {"case": case, "outcome": "accepted", "names_argument": False, "message": ""}


def main(argv: list[str] | None = None) -> int:
    """Run the cases named in ``argv`` (all when none), one JSON line each."""
    only = set(sys.argv[1:] if argv is None else argv)
    values = _values()
    for qualname, obj, sig, arg, kind in cases():
        if only and f"{qualname}({arg})" not in only:
            continue
        print(json.dumps(run_case(values, qualname, obj, sig, arg, kind)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
