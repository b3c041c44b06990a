"""Warnings for settings that run but defeat their purpose, attributed to the user's line."""

import sys
import warnings

__all__ = ["warn_user"]

#: Packages whose frames sit between the user and the check (jaxtyping/beartype wrap calls under runtime checks).
_LIBRARIES = ("icmlx", "optax", "equinox", "jax", "jaxlib", "jaxtyping", "beartype", "typeguard")


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` pointing at the user's code, however deep inside icmlx/optax the check runs."""
    # Level 1 is this frame (the one calling warnings.warn); walk up to the first frame outside the libraries.
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _LIBRARIES:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)
