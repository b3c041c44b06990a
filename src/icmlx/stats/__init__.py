"""Statistics: relative-belief multiple testing in the two-groups sparsity framework.

Will hold the relative belief ratio and its test (one-group normal prior, one hyperparameter), the
Bayes
oracle and exact threshold risks, Benjamini–Hochberg, Bonferroni and horseshoe rules, and a
simulation driver
for asymptotic Bayes optimality under sparsity.

Everything is vectorised over the last (tests) axis and over leading batch axes, and jit-safe
(string
options such as ``gamma2="sparsity"`` are static: close over them). ``horseshoe_nuts`` imports
numpyro
lazily, so ``import icmlx.stats`` stays light.
"""

from ._empirical_bayes import TwoGroupsEM as TwoGroupsEM
from ._empirical_bayes import estimate_sparsity as estimate_sparsity
from ._empirical_bayes import two_groups_em as two_groups_em
from ._fdr import MultipleTestResult as MultipleTestResult
from ._fdr import benjamini_hochberg as benjamini_hochberg
from ._fdr import bh_adjusted_pvalues as bh_adjusted_pvalues
from ._fdr import bonferroni as bonferroni
from ._fdr import bonferroni_threshold as bonferroni_threshold
from ._fdr import two_sided_pvalues as two_sided_pvalues
from ._horseshoe import HorseshoeResult as HorseshoeResult
from ._horseshoe import horseshoe_shrinkage as horseshoe_shrinkage
from ._horseshoe import horseshoe_test as horseshoe_test
from ._horseshoe import horseshoe_threshold as horseshoe_threshold
from ._horseshoe_mcmc import HorseshoeMCMCResult as HorseshoeMCMCResult
from ._horseshoe_mcmc import horseshoe_nuts as horseshoe_nuts
from ._oracle import OracleResult as OracleResult
from ._oracle import ThresholdRisk as ThresholdRisk
from ._oracle import abos_risk_ratio as abos_risk_ratio
from ._oracle import bayes_oracle_test as bayes_oracle_test
from ._oracle import bayes_oracle_threshold as bayes_oracle_threshold
from ._oracle import bfdr_threshold as bfdr_threshold
from ._oracle import calibrate_tau2 as calibrate_tau2
from ._oracle import threshold_risk as threshold_risk
from ._relative_belief import PRESETS as PRESETS
from ._relative_belief import RelativeBeliefResult as RelativeBeliefResult
from ._relative_belief import log_relative_belief_ratio as log_relative_belief_ratio
from ._relative_belief import rb_strength as rb_strength
from ._relative_belief import relative_belief_gamma2 as relative_belief_gamma2
from ._relative_belief import relative_belief_ratio as relative_belief_ratio
from ._relative_belief import relative_belief_test as relative_belief_test
from ._relative_belief import relative_belief_threshold as relative_belief_threshold
from ._simulate import RiskComparison as RiskComparison
from ._simulate import TwoGroupsSample as TwoGroupsSample
from ._simulate import simulate_risk_ratios as simulate_risk_ratios
from ._simulate import simulate_two_groups as simulate_two_groups

__all__ = [
    "PRESETS",
    "HorseshoeMCMCResult",
    "HorseshoeResult",
    "MultipleTestResult",
    "OracleResult",
    "RelativeBeliefResult",
    "RiskComparison",
    "ThresholdRisk",
    "TwoGroupsEM",
    "TwoGroupsSample",
    "abos_risk_ratio",
    "bayes_oracle_test",
    "bayes_oracle_threshold",
    "benjamini_hochberg",
    "bfdr_threshold",
    "bh_adjusted_pvalues",
    "bonferroni",
    "bonferroni_threshold",
    "calibrate_tau2",
    "estimate_sparsity",
    "horseshoe_nuts",
    "horseshoe_shrinkage",
    "horseshoe_test",
    "horseshoe_threshold",
    "log_relative_belief_ratio",
    "rb_strength",
    "relative_belief_gamma2",
    "relative_belief_ratio",
    "relative_belief_test",
    "relative_belief_threshold",
    "simulate_risk_ratios",
    "threshold_risk",
    "simulate_two_groups",
    "two_groups_em",
    "two_sided_pvalues",
]
