"""G-RANS, the learned residual-aware subspace-correction solver: its operator (per-matrix set-up), network,
smoothers, outer steps, solve loop, training and weights (``grans_pretrained.eqx``)."""
