"""The horseshoe's posterior mean shrinkage by SciPy quadrature (float64, independent of icmlx), shared by the
stats tests that check the horseshoe against it."""

import numpy as np
from scipy import integrate


def horseshoe_shrinkage_quad(z: float, tau: float) -> float:
    """$E[1 - \\kappa \\mid z; \\tau]$ by adaptive quadrature over $s = \\sqrt{1 - \\kappa}$, in $t = \\log s$."""

    def f(t, k):
        s2m1 = np.expm1(2 * t)
        return np.exp(0.5 * z * z * s2m1 + (1 + 2 * k) * t) / (tau**2 * (-s2m1) + np.exp(2 * t))

    lo = np.log(tau) - 40.0
    pts = [q for q in (np.log(tau) - 5, np.log(tau), np.log(tau) + 5, -1.0, -0.1, -0.01) if lo < q < 0]
    num = integrate.quad(f, lo, 0, args=(1,), points=pts, epsabs=0, epsrel=1e-12, limit=500)[0]
    den = integrate.quad(f, lo, 0, args=(0,), points=pts, epsabs=0, epsrel=1e-12, limit=500)[0]
    return num / den
