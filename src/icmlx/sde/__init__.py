"""Stochastic differential equations: learning overdamped Langevin drift from sparsely sampled trajectories
by geometry-guided path augmentation (Maoutsa, arXiv:2512.23566). Requires the ``sde`` extra (diffrax).
"""

__all__: list[str] = []
