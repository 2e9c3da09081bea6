"""What this CPU can do, read at run time (a cloud VM can move between CPUs): its model, instruction sets, the
cores this process may use, and the precision `auto` means.
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass
from pathlib import Path

# The instruction sets that decide the precision, in the order they are printed next to benchmark figures
FEATURES = ("avx2", "avx512f", "avx_vnni", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8", "avx512_fp16")
PRECISIONS = ("auto", "f32", "bf16", "int8")


@dataclass(frozen=True)
class CPU:
    model: str  # "Intel(R) Xeon(R) Processor"
    flags: frozenset[str]  # instruction sets from /proc/cpuinfo (empty where it cannot be read)
    cores: int  # cores this process may run on (affinity and cgroup quota)

    @property
    def has_bf16(self) -> bool:
        """Native bf16 arithmetic (AVX512-BF16 or AMX-BF16): without it OpenVINO computes bf16 requests in f32."""
        return bool(self.flags & {"avx512_bf16", "amx_bf16"})

    @property
    def has_amx(self) -> bool:
        """Intel's matrix tiles (Sapphire Rapids and later), for bf16 and int8."""
        return bool(self.flags & {"amx_bf16", "amx_int8"})

    @property
    def int8_units(self) -> str:
        """Which int8 dot-product instructions OpenVINO's dynamic quantization can use."""
        for flag, name in (("amx_int8", "AMX"), ("avx512_vnni", "AVX512-VNNI"), ("avx_vnni", "AVX-VNNI")):
            if flag in self.flags:
                return name
        return "none"

    def describe(self) -> str:
        """One line for benchmark tables and logs: model, cores, and the instruction sets that matter here."""
        present = [f for f in FEATURES if f in self.flags]
        return f"{self.model}, {self.cores} cores, {' '.join(present) or 'no AVX2'}"


@functools.cache
def cpu() -> CPU:
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():  # the first processor's lines are enough
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:  # not Linux: no flags, so f32 unless asked otherwise
        pass
    model = fields.get("model name") or platform.processor() or platform.machine()
    return CPU(model, frozenset(fields.get("flags", "").split()), usable_cores())


def usable_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup v2 CPU quota (containers)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cores


def auto_precision(info: CPU) -> str:
    """What `auto` resolves to: int8 weights where AVX2 exists (a decoder step is bound by the bytes it
    reads; README, Speed and precision), else f32."""
    return "int8" if "avx2" in info.flags else "f32"
