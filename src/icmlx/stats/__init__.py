"""Statistics: relative-belief multiple testing in the two-groups sparsity framework.

Will hold the relative belief ratio and its test (one-group normal prior, one hyperparameter), the Bayes
oracle and exact threshold risks, Benjamini–Hochberg, Bonferroni and horseshoe rules, and a simulation driver
for asymptotic Bayes optimality under sparsity.
"""

__all__: list[str] = []
