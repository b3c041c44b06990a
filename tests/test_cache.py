"""The persistent compilation cache policy of ``import icmlx`` (src/icmlx/_cache.py), each case in a fresh process.

The test suite itself runs with ``ICMLX_CACHE=0`` (tests/conftest.py) so that it stays hermetic; these tests
remove that setting in the child processes they start.
"""

import json
import os
import subprocess
import sys

import pytest

PROBE = (
    "import json, jax, icmlx; "
    "print(json.dumps({'dir': icmlx.compilation_cache_dir(), "
    "'min': jax.config.jax_persistent_cache_min_compile_time_secs}))"
)


def _probe(env_updates, code=PROBE):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ICMLX_CACHE", "ICMLX_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(env_updates)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_default_directory_follows_xdg(tmp_path):
    got = _probe({"XDG_CACHE_HOME": str(tmp_path)})
    assert got["dir"] == str(tmp_path / "icmlx" / "jax")
    assert got["min"] == 0.0
    assert (tmp_path / "icmlx" / "jax").is_dir()


def test_icmlx_cache_dir_wins(tmp_path):
    got = _probe({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "ICMLX_CACHE_DIR": str(tmp_path / "mine")})
    assert got["dir"] == str(tmp_path / "mine")


@pytest.mark.parametrize("value", ["0", "off", "False", "no"])
def test_opt_out(tmp_path, value):
    got = _probe({"XDG_CACHE_HOME": str(tmp_path), "ICMLX_CACHE": value})
    assert got["dir"] is None
    assert got["min"] == 1.0
    assert not (tmp_path / "icmlx").exists()


def test_users_own_jax_setting_is_respected(tmp_path):
    got = _probe({"XDG_CACHE_HOME": str(tmp_path), "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jaxown")})
    assert got["dir"] == str(tmp_path / "jaxown")
    assert got["min"] == 1.0  # icmlx changed nothing
    own = str(tmp_path / "set_in_code")
    code = (
        f"import json, jax; jax.config.update('jax_compilation_cache_dir', {own!r}); "
        "jax.config.update('jax_persistent_cache_min_compile_time_secs', 3.0); import icmlx; "
        "print(json.dumps({'dir': icmlx.compilation_cache_dir(), "
        "'min': jax.config.jax_persistent_cache_min_compile_time_secs}))"
    )
    got = _probe({"XDG_CACHE_HOME": str(tmp_path)}, code)
    assert got == {"dir": str(tmp_path / "set_in_code"), "min": 3.0}


def test_second_process_reads_the_cache(tmp_path):
    # A program compiled in one process is loaded from disk in the next: JAX records a cache hit.
    code = (
        "import json, jax, jax.numpy as jnp, icmlx\n"
        "from jax import monitoring\n"
        "hits = []\n"
        "monitoring.register_event_listener(lambda e, **k: hits.append(e) if 'cache_hits' in e else None)\n"
        "f = jax.jit(lambda x: jnp.linalg.solve(x @ x.T + jnp.eye(x.shape[0]), jnp.cos(x).sum(1)))\n"
        "f(jnp.ones((37, 37))).block_until_ready()\n"
        "print(json.dumps({'dir': icmlx.compilation_cache_dir(), 'min': len(hits)}))\n"
    )
    env = {"ICMLX_CACHE_DIR": str(tmp_path), "ICMLX_CACHE_MIN_COMPILE_SECS": "0"}
    first = _probe(env, code)
    assert first["min"] == 0 and any(tmp_path.iterdir())
    second = _probe(env, code)
    assert second["min"] >= 1


def test_enable_by_hand_validates(tmp_path):
    from icmlx import enable_compilation_cache

    with pytest.raises(ValueError, match="min_compile_secs"):
        enable_compilation_cache(tmp_path, min_compile_secs=-1)


_ONE_SHOT = {
    "benjamini_hochberg": (
        "import numpy as np, jax\nfrom icmlx.stats import benjamini_hochberg\n"  # a device array: NumPy compiles none
        "benjamini_hochberg(jax.device_put(np.random.default_rng(0).random(1000)), 0.1).reject.block_until_ready()\n"
    ),
    "pc_tree": (
        "import numpy as np\nfrom icmlx.structure import pc_tree\n"
        "pc_tree(np.random.default_rng(0).standard_normal((200, 6)), alpha=0.01)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(_ONE_SHOT))
def test_one_shot_script_compiles_nothing_the_second_time(tmp_path, name):
    # Every program a one-shot call compiles is stored, so the next process compiles none (a program with a host
    # callback, e.g. an eqx.error_if on concrete input, would never be stored and would be compiled again).
    code = (
        "import json\nfrom jax import monitoring\nev = {'req': 0, 'hit': 0}\n"
        "def _l(e, **k):\n"
        "    if e.endswith('compile_requests_use_cache'): ev['req'] += 1\n"
        "    if e.endswith('cache_hits'): ev['hit'] += 1\n"
        "monitoring.register_event_listener(_l)\n"
        + _ONE_SHOT[name]
        + "print(json.dumps({'dir': ev['req'], 'min': ev['hit']}))\n"
    )
    env = {"ICMLX_CACHE_DIR": str(tmp_path), "ICMLX_CACHE_MIN_COMPILE_SECS": "0"}
    first = _probe(env, code)
    second = _probe(env, code)
    assert first["dir"] > 0
    assert second["dir"] == second["min"], f"{second['dir'] - second['min']} programs compiled again"
