"""Package-level contracts: version, explicit re-exports, and light imports."""

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
    code = (
        "import sys, icmlx.optim; "
        "bad = [m for m in ('diffrax', 'numpyro', 'flax') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
