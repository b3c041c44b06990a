"""P1 finite elements on triangle meshes: meshes, assembly and the benchmark problems (public as
``icmlx.solvers.fem``)."""
