"""How a driver joins a Ray cluster (pipeline/jobs/ray.py's RayExecutor): a local instance on loopback only, and an
address that is wrong or silent refused in one line, not after Ray's minutes of retries."""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager

from pipeline.errors import OptionError, SubtitleError

log = logging.getLogger(__name__)

REACH_TIMEOUT = 10.0  # seconds for a cluster's address to answer (Ray itself retries an address for minutes)


@contextmanager
def local_nodes_on_loopback():
    """Import ray so that a node it starts itself (--ray auto outside a cluster) listens on 127.0.0.1 alone.

    On Linux, ray.init gives a new node the machine's address, even for `_node_ip_address="127.0.0.1"`
    (services.resolve_ip_for_localhost), and its GCS, raylet, object manager and workers listen on every interface.
    With RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, the default on macOS and Windows, the node's address is 127.0.0.1, and
    Ray's servers then listen there only. Ray reads the variable once, when it is imported (_private/ray_constants.py),
    and hands the node's address to its processes as an argument: it is set for this import alone, no child sees it.
    Joining a cluster is unchanged, except that a loopback address (127.0.0.1:6379) is dialled as loopback."""
    key = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
    if key in os.environ or "ray" in sys.modules:  # (the user's choice; or too late: in a Ray worker, say)
        yield
        return
    os.environ[key] = "0"
    try:
        yield
    finally:
        del os.environ[key]


CHECK_ADDRESS = "check the address (the head's host:port, or ray://host:10001) and that the cluster is up"


def reachable(address: str) -> None:
    """Refuse an address that is not a Ray address or that nothing answers on, in one line and at most
    REACH_TIMEOUT seconds: ray.init retries such an address for minutes, then fails with a traceback."""
    import socket

    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        raise OptionError(
            "ray", f"{address!r} is not a Ray address: use auto, the head's host:port, or ray://host:10001"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT).close()
    except OSError as e:
        raise SubtitleError(f"Nothing answers at {address} ({e.strerror or e}): {CHECK_ADDRESS}") from e


def join(address: str, *, runtime_env: dict) -> None:
    """ray.init on `address` ("auto": RAY_ADDRESS inside a cluster, else a new local instance), its failure one
    SubtitleError line."""
    with local_nodes_on_loopback():
        import ray

    if address != "auto":
        reachable(address)
    # Ray Client starts a server process for each driver; under load one sometimes dies at its start
    # ("Starting Ray client server failed", "Initialization failure from server"): a second try gets another
    tries = 2 if address.startswith("ray://") else 1
    for attempt in range(1, tries + 1):
        try:
            ray.init(
                address=None if address == "auto" else address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
                runtime_env=runtime_env,
            )
            break
        except (ConnectionError, RuntimeError, TimeoutError, ValueError) as e:  # (Ray's words, one line)
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if attempt < tries and not isinstance(e, ValueError):
                log.warning("Ray could not join %s (%s): trying again", address, reason)
                ray.shutdown()
                continue
            raise SubtitleError(f"Ray could not start or join {address} ({reason}): {CHECK_ADDRESS}") from e
