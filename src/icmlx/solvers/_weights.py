"""Reading and writing G-RANS network weights: one JSON header line, then the equinox leaves."""

import json
from pathlib import Path

import equinox as eqx
import jax

from ._grans_net import GRANSNet

__all__ = ["save_weights", "load_weights"]


def save_weights(path: str | Path, net: GRANSNet, meta: dict | None = None) -> Path:
    """Write a network to ``path``: one JSON header line (architecture + ``meta``), then equinox leaves.

    Args:
      path: file path.
      net: the ``GRANSNet``.
      meta: extra JSON-serialisable metadata (seed, command, training sizes, ...).

    Returns:
      The path.

    Examples:
      >>> import jax, tempfile, pathlib
      >>> from icmlx.solvers import GRANSNet, load_weights, save_weights
      >>> net = GRANSNet.init(jax.random.key(0), hidden=4, layers=1)
      >>> path = save_weights(pathlib.Path(tempfile.mkdtemp()) / "net.eqx", net, {"seed": 0})
      >>> back, header = load_weights(path)
      >>> bool((back.w_in == net.w_in).all()), header["hidden"], header["seed"]
      (True, 4, 0)
    """
    path = Path(path)
    header = {"hidden": int(net.w_in.shape[1]), "layers": int(net.w_self.shape[0]),
              "channels": int(net.channels), "format": "icmlx-grans-v1", **(meta or {})}
    with open(path, "wb") as f:
        f.write((json.dumps(header) + "\n").encode())
        eqx.tree_serialise_leaves(f, net)
    return path


def load_weights(path: str | Path) -> tuple[GRANSNet, dict]:
    """Read a file written by :func:`save_weights`.

    Args:
      path: file path.

    Returns:
      ``(net, header)``: the ``GRANSNet`` and the JSON header (architecture and metadata).

    Raises:
      FileNotFoundError: no file at ``path``.
      ValueError: the file is not an icmlx G-RANS weight file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"G-RANS weight file not found: {path}")
    with open(path, "rb") as f:
        header = json.loads(f.readline().decode())
        if header.get("format") != "icmlx-grans-v1":
            raise ValueError(f"{path} is not an icmlx G-RANS weight file")
        skel = GRANSNet.init(jax.random.key(0), hidden=header["hidden"], layers=header["layers"],
                             channels=header["channels"])
        net = eqx.tree_deserialise_leaves(f, skel)
    return net, header
