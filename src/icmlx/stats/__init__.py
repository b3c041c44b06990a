r"""Statistics: relative-belief multiple testing in the two-groups sparsity framework.

The relative belief ratio $RB(0\mid x)$ and its test under a one-group normal prior $N(0,\gamma^2)$ with
one hyperparameter, chosen by a rule object (`OracleGamma2`, `SparsityGamma2`,
`EBSparsityGamma2`, `EBMMLEGamma2`); the Bayes oracle and the exact risks of threshold rules in the
two-groups model of Bogdan et al. (2011); Benjamini–Hochberg, Bonferroni and horseshoe rules; empirical-Bayes fits
(`two_groups_em` returns a `TwoGroupsSolution`); the noise scale estimated from the data
(``sigma="mad"``, `MADSigma`; ``sigma="empirical"``, `EmpiricalNullSigma`; `estimate_sigma`); and a
common-random-numbers simulation driver for asymptotic Bayes optimality under sparsity.

The tests take what users hold: lists, NumPy or JAX arrays, and pandas Series, whose index comes back on the result
(``result.rejected_labels``). Non-finite z-scores are refused with a short ``ValueError``; z-scores that all lie in
``[0, 1]`` (p-values passed by mistake) give a warning, and the p-value procedures refuse values outside ``[0, 1]``.

Everything is vectorised over the last (tests) axis and over leading batch axes, and jit-safe (rule objects and
string options such as ``gamma2="eb_sparsity"`` are static: close over them). ``horseshoe_nuts`` imports numpyro
lazily, so ``import icmlx.stats`` stays light.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:  # for type checkers and IDEs; at run time each module loads on first use (_LAZY below)
    from ._empirical_bayes import TwoGroupsSolution as TwoGroupsSolution
    from ._empirical_bayes import estimate_sparsity as estimate_sparsity
    from ._empirical_bayes import two_groups_em as two_groups_em
    from ._fdr import MultipleTestResult as MultipleTestResult
    from ._fdr import benjamini_hochberg as benjamini_hochberg
    from ._fdr import bh_adjusted_pvalues as bh_adjusted_pvalues
    from ._fdr import bonferroni as bonferroni
    from ._fdr import bonferroni_threshold as bonferroni_threshold
    from ._fdr import two_sided_pvalues as two_sided_pvalues
    from ._gamma2 import PRESETS as PRESETS
    from ._gamma2 import AbstractGamma2 as AbstractGamma2
    from ._gamma2 import EBLocalFDRGamma2 as EBLocalFDRGamma2
    from ._gamma2 import EBMMLEGamma2 as EBMMLEGamma2
    from ._gamma2 import EBSparsityGamma2 as EBSparsityGamma2
    from ._gamma2 import EBStoreyGamma2 as EBStoreyGamma2
    from ._gamma2 import OracleGamma2 as OracleGamma2
    from ._gamma2 import SparsityGamma2 as SparsityGamma2
    from ._gamma2 import relative_belief_gamma2 as relative_belief_gamma2
    from ._horseshoe import HorseshoeResult as HorseshoeResult
    from ._horseshoe import horseshoe_shrinkage as horseshoe_shrinkage
    from ._horseshoe import horseshoe_test as horseshoe_test
    from ._horseshoe import horseshoe_threshold as horseshoe_threshold
    from ._horseshoe_intervals import HorseshoeIntervals as HorseshoeIntervals
    from ._horseshoe_intervals import horseshoe_intervals as horseshoe_intervals
    from ._horseshoe_intervals import horseshoe_mmle_tau as horseshoe_mmle_tau
    from ._horseshoe_mcmc import HorseshoeMCMCResult as HorseshoeMCMCResult
    from ._horseshoe_mcmc import horseshoe_nuts as horseshoe_nuts
    from ._local_fdr import LocalFDRResult as LocalFDRResult
    from ._local_fdr import local_fdr as local_fdr
    from ._multitest import METHODS as METHODS
    from ._multitest import MultipleTestsResult as MultipleTestsResult
    from ._multitest import multipletests as multipletests
    from ._oracle import OracleResult as OracleResult
    from ._oracle import ThresholdRisk as ThresholdRisk
    from ._oracle import abos_risk_ratio as abos_risk_ratio
    from ._oracle import bayes_oracle_test as bayes_oracle_test
    from ._oracle import bayes_oracle_threshold as bayes_oracle_threshold
    from ._oracle import bfdr_threshold as bfdr_threshold
    from ._oracle import calibrate_tau2 as calibrate_tau2
    from ._oracle import threshold_risk as threshold_risk
    from ._plots import plot_rejections as plot_rejections
    from ._qvalues import QValuesResult as QValuesResult
    from ._qvalues import estimate_pi0 as estimate_pi0
    from ._qvalues import qvalues as qvalues
    from ._relative_belief import RelativeBeliefResult as RelativeBeliefResult
    from ._relative_belief import log_relative_belief_ratio as log_relative_belief_ratio
    from ._relative_belief import rb_strength as rb_strength
    from ._relative_belief import relative_belief_ratio as relative_belief_ratio
    from ._relative_belief import relative_belief_test as relative_belief_test
    from ._relative_belief import relative_belief_threshold as relative_belief_threshold
    from ._sigma import AbstractSigma as AbstractSigma
    from ._sigma import EmpiricalNullSigma as EmpiricalNullSigma
    from ._sigma import MADSigma as MADSigma
    from ._sigma import estimate_sigma as estimate_sigma
    from ._simulate import RiskComparison as RiskComparison
    from ._simulate import TwoGroupsSample as TwoGroupsSample
    from ._simulate import simulate_risk_ratios as simulate_risk_ratios
    from ._simulate import simulate_two_groups as simulate_two_groups

# Each public name loads its module on first access, so a one-shot script that needs only benjamini_hochberg does
# not import the horseshoe, empirical-Bayes, oracle and simulation modules.
_LAZY = {
    "TwoGroupsSolution": "_empirical_bayes",
    "estimate_sparsity": "_empirical_bayes",
    "two_groups_em": "_empirical_bayes",
    "MultipleTestResult": "_fdr",
    "benjamini_hochberg": "_fdr",
    "bh_adjusted_pvalues": "_fdr",
    "bonferroni": "_fdr",
    "bonferroni_threshold": "_fdr",
    "two_sided_pvalues": "_fdr",
    "PRESETS": "_gamma2",
    "LocalFDRResult": "_local_fdr",
    "local_fdr": "_local_fdr",
    "METHODS": "_multitest",
    "MultipleTestsResult": "_multitest",
    "multipletests": "_multitest",
    "AbstractGamma2": "_gamma2",
    "EBMMLEGamma2": "_gamma2",
    "EBSparsityGamma2": "_gamma2",
    "EBStoreyGamma2": "_gamma2",
    "EBLocalFDRGamma2": "_gamma2",
    "OracleGamma2": "_gamma2",
    "SparsityGamma2": "_gamma2",
    "relative_belief_gamma2": "_gamma2",
    "HorseshoeResult": "_horseshoe",
    "horseshoe_shrinkage": "_horseshoe",
    "horseshoe_test": "_horseshoe",
    "horseshoe_threshold": "_horseshoe",
    "HorseshoeIntervals": "_horseshoe_intervals",
    "horseshoe_intervals": "_horseshoe_intervals",
    "horseshoe_mmle_tau": "_horseshoe_intervals",
    "HorseshoeMCMCResult": "_horseshoe_mcmc",
    "horseshoe_nuts": "_horseshoe_mcmc",
    "OracleResult": "_oracle",
    "QValuesResult": "_qvalues",
    "estimate_pi0": "_qvalues",
    "qvalues": "_qvalues",
    "ThresholdRisk": "_oracle",
    "abos_risk_ratio": "_oracle",
    "bayes_oracle_test": "_oracle",
    "bayes_oracle_threshold": "_oracle",
    "bfdr_threshold": "_oracle",
    "calibrate_tau2": "_oracle",
    "threshold_risk": "_oracle",
    "plot_rejections": "_plots",
    "RelativeBeliefResult": "_relative_belief",
    "log_relative_belief_ratio": "_relative_belief",
    "rb_strength": "_relative_belief",
    "relative_belief_ratio": "_relative_belief",
    "relative_belief_test": "_relative_belief",
    "relative_belief_threshold": "_relative_belief",
    "AbstractSigma": "_sigma",
    "EmpiricalNullSigma": "_sigma",
    "MADSigma": "_sigma",
    "estimate_sigma": "_sigma",
    "RiskComparison": "_simulate",
    "TwoGroupsSample": "_simulate",
    "simulate_risk_ratios": "_simulate",
    "simulate_two_groups": "_simulate",
}

__all__ = [
    "METHODS",
    "PRESETS",
    "AbstractGamma2",
    "AbstractSigma",
    "EBMMLEGamma2",
    "EBSparsityGamma2",
    "EBStoreyGamma2",
    "EBLocalFDRGamma2",
    "EmpiricalNullSigma",
    "HorseshoeIntervals",
    "HorseshoeMCMCResult",
    "HorseshoeResult",
    "LocalFDRResult",
    "MADSigma",
    "MultipleTestResult",
    "MultipleTestsResult",
    "OracleGamma2",
    "OracleResult",
    "QValuesResult",
    "RelativeBeliefResult",
    "RiskComparison",
    "SparsityGamma2",
    "ThresholdRisk",
    "TwoGroupsSample",
    "TwoGroupsSolution",
    "abos_risk_ratio",
    "bayes_oracle_test",
    "bayes_oracle_threshold",
    "benjamini_hochberg",
    "bfdr_threshold",
    "bh_adjusted_pvalues",
    "bonferroni",
    "bonferroni_threshold",
    "calibrate_tau2",
    "estimate_pi0",
    "estimate_sigma",
    "estimate_sparsity",
    "horseshoe_intervals",
    "horseshoe_mmle_tau",
    "horseshoe_nuts",
    "horseshoe_shrinkage",
    "horseshoe_test",
    "horseshoe_threshold",
    "local_fdr",
    "log_relative_belief_ratio",
    "multipletests",
    "plot_rejections",
    "rb_strength",
    "qvalues",
    "relative_belief_gamma2",
    "relative_belief_ratio",
    "relative_belief_test",
    "relative_belief_threshold",
    "simulate_risk_ratios",
    "simulate_two_groups",
    "threshold_risk",
    "two_groups_em",
    "two_sided_pvalues",
]

__getattr__ = _lazy_attributes(__name__, globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
