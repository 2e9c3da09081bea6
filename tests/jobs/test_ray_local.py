"""Ray's absence and a local Ray instance: they need no cluster of conftest.ray_head, so they are not in test_ray.py."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ENGLISH, clip_path

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_path_never_imports_ray(model_cache, tmp_path):
    """The in-process CLI and the web app's module work without Ray: it is not even imported."""
    code = (
        "import sys, app\n"
        "from pipeline.__main__ import main\n"
        f"assert main([{str(clip_path(ENGLISH[0]))!r}, '-o', {str(tmp_path)!r}, '-q']) == 0\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
    )
    env = {**os.environ, "SUBTITLE_CACHE_DIR": str(model_cache)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == [f"{ENGLISH[0]}.srt"]


# Run in a process of its own: a fresh `import ray`, and no Ray instance of this module's tests to join.
_LISTENERS = """
import json, psutil
from pipeline.jobs.ray import RayExecutor
with RayExecutor("auto", workers=1):
    driver = psutil.Process()
    family = {driver.pid, *(p.pid for p in driver.children(recursive=True))}  # Ray's processes, and this one
    names = {p.pid: p.info["name"] for p in psutil.process_iter(["name"]) if p.pid in family}
    print(json.dumps(sorted((c.laddr.ip, c.laddr.port, names[c.pid]) for c in psutil.net_connections("tcp")
                            if c.status == psutil.CONN_LISTEN and c.pid in names)))
"""


def test_a_local_ray_instance_listens_on_loopback_only():
    """`--ray auto` outside a cluster: the GCS, raylet, object manager, runtime-env agent, workers and this driver
    listen on 127.0.0.1 alone, not on every interface nor on the machine's address."""
    with tempfile.TemporaryDirectory(prefix="ray-") as temp:  # (short: Ray's socket paths go under it)
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
        env["RAY_TMPDIR"] = temp  # (no `ray start` cluster recorded there to join)
        proc = subprocess.run([sys.executable, "-c", _LISTENERS], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    listening = json.loads(proc.stdout.splitlines()[-1])
    assert {name for _, _, name in listening} >= {"gcs_server", "raylet"}
    assert [s for s in listening if not _loopback(s[0])] == []


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback  # (::ffff:127.0.0.1: gRPC's dual-stack form)


@pytest.mark.parametrize(
    "address, message",
    [("127.0.0.1:{port}", "error: Nothing answers at 127.0.0.1:{port} (Connection refused): check the address"),
     ("ray://127.0.0.1:{port}", "error: Nothing answers at ray://127.0.0.1:{port} (Connection refused): check"),
     ("head-node", "error: --ray: 'head-node' is not a Ray address: use auto, the head's host:port, or ray://")],
)  # fmt: skip
def test_a_cluster_address_that_does_not_answer_is_one_line_at_once(address, message, tmp_path):
    """Ray retries an address nothing answers on for minutes and then prints a traceback: the CLI says it in one
    line, in seconds, and writes nothing."""
    from conftest import free_port

    port = free_port()  # (nothing listens there)
    address, message = address.format(port=port), message.format(port=port)
    command = [sys.executable, "-m", "pipeline", str(clip_path(ENGLISH[0])), "-o", str(tmp_path / "out")]
    proc = subprocess.run([*command, "--ray", address], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr
    assert not (tmp_path / "out").exists()
