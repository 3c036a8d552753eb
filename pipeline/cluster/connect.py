"""Connecting one run to Ray, and letting go of it afterwards.

`aee run --executor ray` with no `--address` starts a Ray instance on this machine for the run,
bound to 127.0.0.1 only (node IP on the loopback, no dashboard, no usage statistics, a fresh
random token for its processes), and stops it when the run ends. `--address auto` or `HOST:PORT`
joins a cluster someone started (`ray start`, `ray up`, KubeRay) from one of its nodes; that
cluster stays up afterwards. A cluster reached on a loopback address gets the loopback node IP too,
so nothing is sent to any other address. A `ray://` address (Ray Client, a driver outside the
cluster) is refused with the way round it: Ray Data, which carries the chunks, does not work
through Ray Client, so the run goes on a node of the cluster (`ray job submit ... -- aee run ...
--address auto`). With no `--address`, a `RAY_ADDRESS` in the environment is the address, as Ray's
own tools read it (and messages name it as such); `--address local` starts the run's own instance
even then.

Ray starts its workers in the cluster's environment, not the driver's, so the variables that
configure judges travel with the job (`runtime_env.env_vars`): everything named AEE_*, OPENAI_*,
AZURE_OPENAI_*, HF_*, TRANSFORMERS_* and SCRIPTED_JUDGE_*. That includes an API key: it is then
held by the cluster for the job's lifetime, like any secret a Ray job is given.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from pipeline.errors import InputError

__all__ = ["FORWARDED_PREFIXES", "check_address", "connected", "effective_address", "forwarded_env", "import_ray",
           "is_loopback"]

FORWARDED_PREFIXES = ("AEE_", "OPENAI_", "AZURE_OPENAI_", "HF_", "TRANSFORMERS_", "SCRIPTED_JUDGE_")
# Variables that are the driver's own business: where its results and its cache live (workers are
# handed the cache's place explicitly), how big the runner's chunks are.
_DRIVER_ONLY = ("AEE_RESULTS_DIR", "AEE_CHUNK_SIZE")


def import_ray() -> Any:
    """The `ray` module, or InputError saying how to install the optional extra."""
    try:
        import ray
        import ray.data  # noqa: F401 - the executor needs Ray Data, part of the extra
    except ImportError as exc:
        raise InputError(f"--executor ray needs Ray (pip install 'answer-engine-audit[ray]', "
                         f"or `pip install '.[ray]'` in a checkout): {exc}") from exc
    return ray


def is_loopback(address: str | None) -> bool:
    """True for addresses on this machine's loopback (127.x.x.x, localhost, ::1), with or without
    a scheme and port."""
    if not address:
        return False
    host = address.split("://", 1)[-1]
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return host == "localhost" or host == "::1" or host.startswith("127.")


def effective_address(address: str | None) -> tuple[str | None, str]:
    """(the address a run connects to, where it came from: "--address", "RAY_ADDRESS" or "" for a
    new local instance). Ray itself reads RAY_ADDRESS, so a run without --address honours it rather
    than start a local instance that Ray would then try to attach to the cluster."""
    if address not in (None, ""):
        return (None, "") if address == "local" else (address, "--address")
    from_env = os.environ.get("RAY_ADDRESS", "").strip()
    if from_env and from_env != "local":
        return from_env, "RAY_ADDRESS"
    return None, ""


def _reachable(address: str, origin: str) -> None:
    """InputError at once when nothing listens at a HOST:PORT address (Ray itself keeps retrying
    for minutes before it gives up on a dead address)."""
    text = address.split("://", 1)[-1]
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise InputError(f"could not connect to Ray at {address} (from {origin}): nothing answers there "
                         f"({exc.strerror or type(exc).__name__}); start the cluster, or unset RAY_ADDRESS / pass "
                         "--address local for an instance of this run's own") from None


def check_address(address: str | None) -> None:
    """InputError for an address this executor cannot use (see the module doc on ray://)."""
    address, origin = effective_address(address)
    if str(address or "").startswith("ray://"):
        raise InputError(f"{origin} {address}: Ray Data, which carries the chunks to the workers, does not work through "
                         "Ray Client (ray://); run aee on a node of the cluster with --address auto, for instance "
                         "`ray job submit --address http://HEAD:8265 -- aee run ... --executor ray --address auto` "
                         "(docs/scaling.md)")


def forwarded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a worker needs to build the same judge as the driver (see the module doc)."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if k.startswith(FORWARDED_PREFIXES) and k not in _DRIVER_ONLY}


@contextmanager
def connected(address: str | None, workers: int | None = None) -> Iterator[Any]:
    """Ray, initialised for one run (see the module doc), shut down afterwards. An instance that is
    already initialised in this process (a notebook, a test) is used as it is and left running."""
    check_address(address)
    address, origin = effective_address(address)
    local = address is None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if local or is_loopback(address):
        # read when Ray is imported: take the loopback address as this node's IP instead of asking
        # the network stack which interface would route outwards
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    token_set = False
    if local and "ray" not in sys.modules and not os.environ.get("RAY_AUTH_TOKEN") \
            and os.environ.get("RAY_AUTH_MODE", "token") == "token":
        # a token for this instance only, in the environment its processes inherit (Ray would
        # otherwise write one to ~/.ray for later instances); Ray reads it when it is imported
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        token_set = True
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {"runtime_env": {"env_vars": forwarded_env()}, "logging_level": logging.WARNING,
                              "log_to_driver": True}
    if local:
        kwargs.update(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False, _node_ip_address="127.0.0.1")
    else:
        kwargs["address"] = address
        if is_loopback(address):
            kwargs["_node_ip_address"] = "127.0.0.1"
    if address is not None:
        _reachable(address, origin)
    # a local instance must not be pointed at a cluster by a RAY_ADDRESS left in the environment
    hidden = os.environ.pop("RAY_ADDRESS", None) if local else None
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"{address} (from {origin})" if address else "a new local instance on this machine"
        raise InputError(f"could not connect to Ray at {where}: {exc}") from exc
    finally:
        if hidden is not None:
            os.environ["RAY_ADDRESS"] = hidden
    try:
        yield ray
    finally:
        ray.shutdown()
        if token_set:
            os.environ.pop("RAY_AUTH_TOKEN", None)
            os.environ.pop("RAY_AUTH_MODE", None)
