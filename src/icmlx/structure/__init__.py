"""Structure learning: the PC algorithm and the optimal poly-forest learner (Gao, Wang & Aragam,
arXiv:2507.05689), with batched Gaussian, discrete, Bernoulli and nonparametric conditional-independence tests.
"""

__all__: list[str] = []
