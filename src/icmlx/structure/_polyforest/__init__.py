"""The optimal poly-forest learner (``pc_tree``): the fused score kernels of each tester and the tree scores they
feed."""
