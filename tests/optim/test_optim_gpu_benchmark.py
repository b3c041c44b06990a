"""``benchmarks/gpu.py --smoke`` runs end to end on CPU and writes a well-formed record."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_benchmark_smoke(tmp_path):
    out = tmp_path / "gpu_smoke.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-W", "ignore", str(ROOT / "benchmarks" / "gpu.py"), "--smoke",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert rec["smoke"] is True and rec["environment"]["backend"] == "cpu"
    parts = {r["part"] for r in rec["rows"]}
    assert parts == {"optimizer step", "pc fisherz", "solve poisson2d"}
    names = {r["optimizer"] for r in rec["rows"] if r["part"] == "optimizer step"}
    assert {"icmlx DASH (f32 root matmuls)", "icmlx DASH (bf16 root matmuls)", "icmlx SOAP", "optax.adam"} <= names
    for r in rec["rows"]:
        if r["part"] == "optimizer step":
            assert r["ms_per_step"] > 0 and r["compile_s"] > 0
    solve_row = next(r for r in rec["rows"] if r["part"] == "solve poisson2d")
    assert solve_row["relres"] <= 1e-5  # rtol=1e-6 in float32: the true residual within a few float32 ulps
    pc_row = next(r for r in rec["rows"] if r["part"] == "pc fisherz")
    assert pc_row["skeleton_recall"] > 0.5 and pc_row["skeleton_precision"] > 0.5
