"""One name per idea: the fields of every public class and the parameters of every public callable, in every
subpackage, use the library's word for each idea (the glossary in ``docs/design/names.md``).

`SYNONYMS` maps each word the library does not use to the one it does. A synonym found in any public field or
parameter fails the test with the place and the word to use instead.
"""

import dataclasses
import importlib
import inspect

import pytest

SUBPACKAGES = ("icmlx", "icmlx.optim", "icmlx.stats", "icmlx.structure", "icmlx.sde", "icmlx.solvers")

# word not used -> the library's word (statsmodels, optax and lineax spellings where users come from them)
SYNONYMS = {
    # decisions of a multiple-testing procedure (statsmodels' `reject`); their count is `num_rejected`
    "rejected": "reject", "rejections": "reject", "decisions": "reject", "discoveries": "reject",
    "n_rejected": "num_rejected", "num_rejections": "num_rejected", "num_discoveries": "num_rejected",
    # a fixed number of steps (lineax/optimistix say `max_steps` for a cap, `num_steps` for a count)
    "n_iter": "num_steps", "n_iters": "num_steps", "num_iter": "num_steps", "num_iters": "num_steps",
    "num_iterations": "num_steps", "n_iterations": "num_steps", "iterations": "num_steps", "n_steps": "num_steps",
    "nsteps": "num_steps", "num_sweeps": "num_steps", "sweeps": "num_steps", "n_sweeps": "num_steps",
    "maxiter": "max_steps", "max_iter": "max_steps", "max_iters": "max_steps", "max_iterations": "max_steps",
    # counts are `num_<things>`
    "n_tests": "num_tests", "ntests": "num_tests", "n_samples": "num_samples", "nsamples": "num_samples",
    "n_bins": "num_bins", "nbins": "num_bins", "n_permutations": "num_permutations",
    "n_resamples": "num_resamples", "n_boot": "num_resamples", "num_bootstrap": "num_resamples",
    "n_paths": "num_paths", "n_particles": "num_particles", "n_levels": "num_levels", "n_nodes": "num_nodes",
    # standard errors are `<quantity>_se`
    "standard_errors": "<quantity>_se", "standard_error": "<quantity>_se", "stderr": "<quantity>_se",
    "std_err": "<quantity>_se", "se": "<quantity>_se",
    # interval ends
    "ci_low": "lower", "ci_high": "upper", "ci_lower": "lower", "ci_upper": "upper", "lo": "lower", "hi": "upper",
    # the spectral bound of the smoothers
    "lam": "lambda_max", "lmax": "lambda_max", "eig_max": "lambda_max", "rho_max": "lambda_max",
    # p-values
    "p_value": "pvalue", "pval": "pvalue", "p_val": "pvalue", "p_values": "pvalues", "pvals": "pvalues",
    "adjusted_pvalues": "pvalues_adjusted", "pvals_corrected": "pvalues_adjusted",
    # tolerances and random keys
    "tol": "rtol", "tolerance": "rtol", "seed": "key", "rng": "key", "rng_key": "key", "prng_key": "key",
    # what a structure search takes
    "dataset": "data",
}


def _public_objects():
    for modname in SUBPACKAGES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            yield modname, name, getattr(mod, name)


def _names_of(obj) -> list[tuple[str, str]]:
    """``(kind, name)`` for the fields of a public class and the parameters of a public callable."""
    out = []
    if inspect.isclass(obj):
        if dataclasses.is_dataclass(obj):
            out += [("field", f.name) for f in dataclasses.fields(obj)]
        elif hasattr(obj, "_fields"):
            out += [("field", f) for f in obj._fields]
        out += [("property", n) for n, v in vars(obj).items() if isinstance(v, property)]
        for n, v in vars(obj).items():
            if callable(v) and not n.startswith("_"):
                try:
                    out += [("parameter of " + n, p) for p in inspect.signature(v).parameters]
                except (TypeError, ValueError):
                    pass
    elif callable(obj):
        try:
            out += [("parameter", p) for p in inspect.signature(obj).parameters]
        except (TypeError, ValueError):
            pass
    return [(k, n) for k, n in out if not n.startswith("_")]


def _all_names() -> list[tuple[str, str, str]]:
    return [(f"{mod}.{name}", kind, n) for mod, name, obj in _public_objects() for kind, n in _names_of(obj)]


def test_public_fields_and_parameters_use_one_name_per_idea():
    pytest.importorskip("scipy")
    found = [f"{where} {kind} {n!r}: use {SYNONYMS[n]!r}" for where, kind, n in _all_names() if n in SYNONYMS]
    assert not found, "synonyms of the library's names:\n" + "\n".join(sorted(set(found)))


def test_the_scan_reaches_every_subpackage_and_the_canonical_names():
    pytest.importorskip("scipy")
    names = _all_names()
    reached = {where.rsplit(".", 1)[0] for where, _, _ in names}
    assert set(SUBPACKAGES) - {"icmlx"} <= reached
    seen = {(where, n) for where, _, n in names}
    # the decisions of every procedure, the fixed step counts and the interval ends, where the glossary puts them
    for where, n in [("icmlx.stats.MultipleTestsResult", "reject"), ("icmlx.stats.MultipleTestResult", "reject"),
                     ("icmlx.stats.RelativeBeliefResult", "reject"), ("icmlx.stats.HorseshoeResult", "reject"),
                     ("icmlx.solvers.GaussSeidelRelaxation", "num_steps"),
                     ("icmlx.solvers.JacobiRelaxation", "num_steps"), ("icmlx.optim.NewtonDB", "num_steps"),
                     ("icmlx.optim.SlopeFitResult", "lower"), ("icmlx.stats.HorseshoeIntervals", "lower"),
                     ("icmlx.solvers.MultilevelHierarchy", "lambda_max"),
                     ("icmlx.solvers.LinearSolution", "num_rejected"),
                     ("icmlx.sde.FunctionClassSelection", "scores_se")]:
        assert (where, n) in seen, (where, n)


def test_a_synonym_is_caught():
    # the scan itself: a class with a synonym field is reported
    @dataclasses.dataclass
    class Result:
        rejected: bool
        n_iter: int

    got = [n for _, n in _names_of(Result) if n in SYNONYMS]
    assert got == ["rejected", "n_iter"]
