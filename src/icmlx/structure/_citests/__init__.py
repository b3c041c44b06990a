"""Conditional-independence tests: Fisher-z (padded and testwise), the discrete counts (χ², G², Bernoulli; sorted
and flat counting, the χ² tail), KCI, the degenerate-Gaussian mixed test, the binned nonparametric test, user
functions, d-separation, and the tester strategy objects (``FisherZ``, ``ChiSquare``, ...) with their batched
evaluators."""
