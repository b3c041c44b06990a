"""The constraint-based search: the PC skeleton and its level-by-level driver, the lockstep driver over several
data sets, ``bootstrap_pc``, the collider rules, background knowledge and the UC/Meek orientation phase."""
