"""The process's BLAS threads once a job has started (pipeline/asr/compiled.py, blas_on_one_thread)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, numpy
from threadpoolctl import threadpool_info
from pipeline.asr.compiled import blas_on_one_thread
import scipy.linalg
before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
blas_on_one_thread(with_scipy=True)
numpy.ones((300, 300)) @ numpy.ones((300, 300))
after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps([before, after]))
"""


def test_numpy_and_scipy_blas_run_on_one_thread():
    """numpy and SciPy each load an OpenBLAS of their own (one, where a build shares it); each starts a thread per
    core unless told, and those threads contend with OpenVINO's."""
    env = {"OPENBLAS_NUM_THREADS": "", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert after and len(after) == len(before)
    assert set(after) == {1}
    if len(os.sched_getaffinity(0)) > 1:  # (what was limited: a thread per core)
        assert max(before) > 1
