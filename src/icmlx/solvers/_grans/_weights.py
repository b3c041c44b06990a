"""Reading and writing G-RANS network weights: one JSON header line, then the equinox leaves."""

import json
from pathlib import Path

import equinox as eqx
import jax

from ._network import GRANSNet

__all__ = ["save_weights", "load_weights"]


def save_weights(path: str | Path, net: GRANSNet, meta: dict | None = None) -> Path:
    """Write a network to ``path``: one JSON header line (architecture + ``meta``), then equinox leaves.

    Args:
      path: file path.
      net: the ``GRANSNet``.
      meta: extra JSON-serialisable metadata (seed, command, training sizes, ...).

    Returns:
      The path.

    Raises:
      TypeError: ``net`` is not a ``GRANSNet``. FileNotFoundError: the directory of ``path`` does not exist.

    Examples:
      >>> import jax, tempfile, pathlib
      >>> from icmlx.solvers import GRANSNet, load_weights, save_weights
      >>> net = GRANSNet.init(jax.random.key(0), hidden=4, layers=1)
      >>> path = save_weights(pathlib.Path(tempfile.mkdtemp()) / "net.eqx", net, {"seed": 0})
      >>> back, header = load_weights(path)
      >>> bool((back.w_in == net.w_in).all()), header["hidden"], header["seed"]
      (True, 4, 0)
    """
    if not isinstance(net, GRANSNet):
        raise TypeError(f"save_weights: net must be a GRANSNet, got {type(net).__name__}")
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"save_weights: no such directory {path.parent}; create it first")
    header = {"hidden": int(net.w_in.shape[1]), "layers": int(net.w_self.shape[0]),
              "channels": int(net.channels), "format": "icmlx-grans-v1", **(meta or {})}
    with open(path, "wb") as f:
        f.write((json.dumps(header) + "\n").encode())
        eqx.tree_serialise_leaves(f, net)
    return path


def load_weights(path: str | Path) -> tuple[GRANSNet, dict]:
    """Read a file written by `save_weights`.

    Args:
      path: file path.

    Returns:
      ``(net, header)``: the ``GRANSNet`` and the JSON header (architecture and metadata).

    Raises:
      FileNotFoundError: no file at ``path``. IsADirectoryError: ``path`` is a directory.
      ValueError: the file is not an icmlx G-RANS weight file, or it is truncated or corrupt.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"G-RANS weight file not found: {path}")
    if not path.is_file():
        raise IsADirectoryError(f"{path} is a directory, not a G-RANS weight file")
    with open(path, "rb") as f:
        try:
            header = json.loads(f.readline().decode())
        except (UnicodeDecodeError, ValueError):
            header = None
        if not isinstance(header, dict) or header.get("format") != "icmlx-grans-v1":
            raise ValueError(f"{path} is not an icmlx G-RANS weight file (no icmlx-grans-v1 header line); "
                             "write one with save_weights")
        try:
            skel = GRANSNet.init(jax.random.key(0), hidden=header["hidden"], layers=header["layers"],
                                 channels=header["channels"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{path}: the G-RANS weight file header is corrupt ({err}); write the file again "
                             "with save_weights") from None
        try:
            net = eqx.tree_deserialise_leaves(f, skel)
        except Exception as err:  # noqa: BLE001 - any failure here means the leaves do not match the header
            raise ValueError(f"{path}: the G-RANS weight file is truncated or corrupt (its leaves do not match "
                             f"the header: {type(err).__name__}); write it again with save_weights") from None
        if f.read(1):
            raise ValueError(f"{path}: the G-RANS weight file is corrupt (data after the last leaf)")
    return net, header
