"""Package-level contracts: version, explicit re-exports, and light imports."""

import os
import subprocess
import sys

import jax
import pytest

import icmlx


def test_version_from_metadata():
    import importlib.metadata

    assert icmlx.__version__ == importlib.metadata.version("icmlx")


def test_fake_devices_and_strict_promotion():
    assert jax.device_count() == 4
    assert jax.config.jax_numpy_dtype_promotion == "strict"


@pytest.mark.parametrize("sub", ["optim", "stats", "structure", "sde", "solvers"])
def test_subpackages_have_all_and_docstring(sub):
    import importlib

    mod = importlib.import_module(f"icmlx.{sub}")
    assert mod.__doc__ and len(mod.__doc__) > 40
    assert isinstance(mod.__all__, list | tuple)
    for name in mod.__all__:
        assert hasattr(mod, name), f"icmlx.{sub}.__all__ lists missing {name!r}"
        assert not name.startswith("_")


def test_optim_does_not_import_heavy_dependencies():
    # also: each subpackage loads a name's module on first use, so a first call pays only for what it needs
    code = """
import sys, icmlx.optim, icmlx.stats, icmlx.structure, icmlx.sde, icmlx.solvers
loaded = lambda *names: [m for m in names if m in sys.modules]
assert not loaded("lineax", "optax", "diffrax", "icmlx.optim._dash", "icmlx.sde._em", "icmlx.solvers._krylov",
                  "icmlx.structure._search", "icmlx.stats._fdr"), loaded("lineax", "optax", "diffrax")
from icmlx.optim import dash
from icmlx.stats import benjamini_hochberg
assert not loaded("diffrax", "numpyro", "flax", "icmlx.optim._robustness"), loaded("diffrax", "numpyro", "flax")
from icmlx.sde import infer_drift
assert not loaded("diffrax", "icmlx.sde._simulate"), "infer_drift imported the simulator (diffrax)"
assert icmlx.solvers.fem.__name__ == "icmlx.solvers.fem" and set(icmlx.sde.__all__) <= set(dir(icmlx.sde))
"""
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "ICMLX_CACHE": "0"})
