"""Scaling figures of ``icmlx.structure`` and ``icmlx.solvers`` against problem size, drawn from the committed
results of their benchmarks (no timing is run here):

* ``benchmarks/results/scaling_structure.png``: `pc` (Fisher-z, uniform-parents DAGs of expected degree 2.5,
  n = 2,000, α = 0.01) time and peak memory against d from ``structure_scale.json``, and `pc_tree` on polytrees from
  ``structure_pc.json``, each beside causal-learn's PC where it was run;
* ``benchmarks/results/scaling_solvers.png``: set-up + solve of 2-D Poisson to 1e-8 against the unknowns from
  ``solvers_amg.json`` (16k and 65k from the quick part, 1M, 4M), icmlx ``solve`` beside PyAMG SA+CG, and their
  ratio.

The sde and stats sweeps draw their own figures (``sde_scale.py``, ``stats_scale.py``). The docs page "How cost
grows" shows all four.

    python benchmarks/scaling_figures.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def _load(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def structure_points() -> dict[str, list[tuple[float, float, float | None]]]:
    """``(d, seconds, peak GB or None)`` per curve."""
    scale = [r for r in _load("structure_scale")["rows"] if "expected_degree" in r]
    out = {"icmlx pc": sorted((r["d"], r["icmlx_s"], r.get("peak_rss_gb_icmlx")) for r in scale),
           "causal-learn pc": sorted((r["d"], r["causal_learn_s"], None) for r in scale if "causal_learn_s" in r)}
    pcr = [r for r in _load("structure_pc")["rows"] if str(r.get("case", "")).startswith("polytree")]
    out["icmlx pc_tree (polytrees)"] = sorted((r["d"], r["icmlx_s"], None) for r in pcr)
    out["causal-learn pc (polytrees)"] = sorted((r["d"], r["causal_learn_s"], None) for r in pcr
                                                if "causal_learn_s" in r)
    return out


def solvers_points() -> dict[str, list[tuple[float, float, float | None]]]:
    """``(unknowns, seconds, peak GB or None)`` per curve: 2-D Poisson, set-up + solve."""
    parts = _load("solvers_amg")["parts"]
    curves: dict[str, dict[int, tuple[float, float | None]]] = {"icmlx solve": {}, "PyAMG SA+CG": {}}
    for part in ("quick", "poisson_1m"):
        for r in parts.get(part, {}).get("rows", []):
            if r.get("problem") != "poisson" or r.get("total") is None:
                continue
            key = {"icmlx solve (SA+CG)": "icmlx solve", "PyAMG SA+CG": "PyAMG SA+CG"}.get(r["solver"])
            if key:
                curves[key][int(r["n"])] = (r["total"], None)
    for r in parts.get("large", {}).get("rows", []):
        if r.get("problem") == "poisson2d":
            key = "icmlx solve" if r["solver"].startswith("icmlx") else "PyAMG SA+CG"
            curves[key][int(r["n"])] = (r["in_process"], r.get("peak_gb"))
    return {k: sorted((n, t, m) for n, (t, m) in v.items()) for k, v in curves.items()}


def _draw(points, path: Path, xlabel: str, title: str, styles: dict, ratio_to: str | None = None) -> None:
    """Time against size on the left; on the right the peak memory, or with ``ratio_to`` the time over that
    curve's at the same size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for label, pts in points.items():
        if not pts:
            continue
        color, ls = styles[label]
        x, t, m = zip(*pts)
        axes[0].loglog(x, t, ls, color=color, marker="o", label=label)
        if ratio_to is not None:
            if label != ratio_to:
                ref = dict((xi, ti) for xi, ti, _ in points[ratio_to])
                xr = [xi for xi in x if xi in ref]
                axes[1].semilogx(xr, [dict(zip(x, t))[xi] / ref[xi] for xi in xr], ls, color=color, marker="o",
                                 label=f"{label} / {ratio_to}")
            continue
        mem = [(xi, mi) for xi, mi in zip(x, m) if mi is not None]
        if mem:
            xm, mm = map(np.asarray, zip(*mem))
            axes[1].loglog(xm, mm, ls, color=color, marker="o", label=label)
    axes[0].set(xlabel=xlabel, ylabel="seconds")
    if ratio_to is not None:
        axes[1].axhline(1.0, color="grey", lw=0.8)
        axes[1].set(xlabel=xlabel, ylabel="time ratio")
    else:
        axes[1].set(xlabel=xlabel, ylabel="peak resident memory of the process (GB)")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    from _harness import save_figure

    save_figure(fig, path)
    plt.close(fig)
    print(f"wrote {path}")


def main() -> None:
    _draw(structure_points(), RESULTS / "scaling_structure.png", "variables d",
          "icmlx.structure: PC against the number of variables (n = 2,000, Fisher-z)",
          {"icmlx pc": ("C0", "-"), "causal-learn pc": ("C0", "--"), "icmlx pc_tree (polytrees)": ("C1", "-"),
           "causal-learn pc (polytrees)": ("C1", "--")})
    _draw(solvers_points(), RESULTS / "scaling_solvers.png", "unknowns",
          "icmlx.solvers: 2-D Poisson, set-up + solve to 1e-8",
          {"icmlx solve": ("C0", "-"), "PyAMG SA+CG": ("C0", "--")}, ratio_to="PyAMG SA+CG")


if __name__ == "__main__":
    main()
