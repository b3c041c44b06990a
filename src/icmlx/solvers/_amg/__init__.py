"""Smoothed-aggregation multigrid: strength of connection, aggregation, tentative and smoothed prolongation,
relaxation, the hierarchy and its cycle, the host set-up (``build_hierarchy``) and the JAX numeric set-up that
``AMGSolver.update`` runs on a fixed sparsity pattern."""
