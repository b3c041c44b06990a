"""P1 finite elements on triangle meshes, assembled in JAX (segment sums into COO / BCOO).

Four model equations with random coefficient fields (``make_problem``): Poisson, reaction–diffusion,
advection–diffusion and Helmholtz (with a resonance filter), homogeneous Dirichlet conditions condensed out.
Validated against scikit-fem to 1e-12 in float64 (``tests/solvers/test_solvers_fem.py``).
"""

from ._fem._assembly import EQUATIONS as EQUATIONS
from ._fem._assembly import FEMProblem as FEMProblem
from ._fem._assembly import Mesh as Mesh
from ._fem._assembly import assemble_p1 as assemble_p1
from ._fem._assembly import make_problem as make_problem
from ._fem._assembly import mesh_from_arrays as mesh_from_arrays
from ._fem._assembly import quadrature_points as quadrature_points
from ._fem._assembly import random_field as random_field
from ._fem._assembly import resonance_gap as resonance_gap
from ._fem._assembly import unit_square_mesh as unit_square_mesh

__all__ = [
    "EQUATIONS",
    "FEMProblem",
    "Mesh",
    "assemble_p1",
    "make_problem",
    "mesh_from_arrays",
    "quadrature_points",
    "random_field",
    "resonance_gap",
    "unit_square_mesh",
]
