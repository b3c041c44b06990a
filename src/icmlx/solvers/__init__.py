"""Linear solvers: G-RANS, a self-supervised neural residual-aware subspace-correction solver for sparse FEM
systems, with P1 finite-element assembly and classical Krylov/AMG baselines in JAX.
"""

__all__: list[str] = []
