"""Optimisation: annealed learning-rate schedules and DASH (batched Shampoo).

Schedules (Attia & Koren, arXiv:2503.09411) are pure ``count -> value`` functions usable anywhere optax takes
a learning rate. DASH (Modoranu et al., arXiv:2602.02016) will live here as optax transformations.
"""

__all__: list[str] = []
