"""Krylov methods: CG, BiCGStab and restarted GMRES on any operator, each solve differentiable by implicit
differentiation (``cg``, ``gmres``, ``bicgstab``; the compiled loops and ``implicit_solve`` for the front door)."""
