"""Where OpenVINO keeps compiled blobs: a folder per CPU, OpenVINO version, model, hints and thread count, and a lock
around compiling into one (OpenVINO writes a blob in place: a second process could read it half-written)."""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.asr.precision import Precision
from pipeline.cpu import cpu


def cpu_config(threads: int) -> dict:
    """What every model of ours is compiled with: latency first, `threads` CPU threads (0: OpenVINO chooses), and no
    pinning. OpenVINO pins each thread to a core by default, and processes that do not know of each other (Ray workers
    on one node, a second job's process, the tests' workers) all pin to the first cores: two processes of one thread
    each took twice as long as one alone (docs/engine.md, Threads and pinning)."""
    return {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads, "ENABLE_CPU_PINNING": False}


def blas_on_one_thread(*, with_scipy: bool = False) -> None:
    """The BLAS libraries loaded in this process (numpy's OpenBLAS; with `with_scipy`, SciPy's own, loaded first) on
    one thread from now on. Our models' OpenVINO threads already fill the cores; the threads OpenBLAS starts for a
    product (the speaker turns', the word timing's) only contend with them and spin after it (docs/engine.md,
    *Threads and pinning*)."""
    from threadpoolctl import threadpool_limits

    if with_scipy:
        import scipy.linalg  # noqa: F401  (its OpenBLAS is loaded with it)
    threadpool_limits(limits=1, user_api="blas")


def compiled_cache_dir(precision: Precision, threads: int) -> Path:
    """Where OpenVINO keeps compiled blobs for this CPU, precision and thread count. OpenVINO's own cache key leaves
    the precision hint out (a bf16 compile would load the f32 blob of the same IR and crash), and a blob compiled for
    one CPU's instruction sets must not be loaded on another: so each gets its own folder, named with its hints."""
    hints = f"{precision.encoder}-{precision.decoder}-{precision.kv_cache}"
    own = f"{precision.encoder_weights}-" if precision.encoder_weights else ""  # (an encoder's weights not the IR's)
    return compiled_dir(f"{precision.name}-{own}{hints}-{threads}t")


def compiled_dir(name: str) -> Path:
    """The folder of compiled blobs `name` (the models, hints and thread count) on this CPU and OpenVINO version."""
    import openvino as ov

    from convert.export import cache_root

    machine = hashlib.sha256(f"{ov.get_version()} {cpu().model} {sorted(cpu().flags)}".encode()).hexdigest()[:12]
    return cache_root() / "compiled" / f"{machine}-{name}"


@contextmanager
def compiling(folder: Path) -> Iterator[None]:
    """Held while models compile into (or load from) `folder`: one process at a time, the others wait and then read
    whole blobs. The lock goes with the process, also when it is killed."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def compile_small(xml: Path, *, threads: int, precision: str = "auto"):
    """One of our small models (the speaker encoder, the segmentation model) compiled for this CPU, its blobs cached
    under the IR's folder name, hint and thread count: "auto" is bf16 where the CPU has it natively, f32 elsewhere."""
    import openvino as ov

    if precision == "auto":
        precision = "bf16" if cpu().has_bf16 else "f32"
    core = ov.Core()
    folder = compiled_dir(f"{xml.parent.name}-{precision}-{threads}t")
    core.set_property({"CACHE_DIR": str(folder)})
    with compiling(folder):
        return core.compile_model(xml, "CPU", {**cpu_config(threads), "INFERENCE_PRECISION_HINT": precision})
