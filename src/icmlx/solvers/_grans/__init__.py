"""G-RANS, the learned residual-aware subspace-correction solver: its operator (per-matrix set-up), network,
smoothers, outer steps, solve loop, training (also on the Helmholtz family) and weights (``grans_pretrained.eqx``,
``grans_helmholtz.eqx``)."""
