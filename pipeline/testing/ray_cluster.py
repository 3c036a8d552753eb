"""A Ray cluster on this machine's loopback, for tests and benchmarks: `ray start --head` and as many
`ray start --address` worker nodes as asked, each with its own CPUs, stopped afterwards.

    with LoopbackCluster(head_cpus=1, worker_nodes=[1]) as cluster:
        subprocess.run(["aee", "run", ..., "--executor", "ray", "--address", cluster.address], env=cluster.env())

Everything listens on 127.0.0.1 and talks to 127.0.0.1 only: every node's IP is the loopback
address (a worker node is started through a small wrapper, because Ray's command line otherwise
replaces a loopback address by the interface it would route outwards through), there is no
dashboard and no usage statistics, and the nodes and their drivers share a random token made for
this cluster (nothing is written to ~/.ray). Each `ray start --block` runs in a session of its own;
`stop()` ends those sessions, every process in them by its id, SIGTERM first and SIGKILL after a
grace period, and it runs on any exit from the `with` block, failures included.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

__all__ = ["LoopbackCluster", "ray_installed"]

# `ray start` for a worker node, keeping the loopback address as the node's IP (see the module doc)
_WORKER_NODE = """
import sys
import ray._private.ray_constants as constants
import ray._private.services as services
constants.ENABLE_RAY_CLUSTER = True
services.node_ip_address_from_perspective = lambda *args, **kwargs: "127.0.0.1"
from ray.scripts.scripts import main
sys.argv = ["ray", *sys.argv[1:]]
main()
"""


def ray_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sessions_members(sids: set[int]) -> list[int]:
    """Ids of the processes whose session is one of `sids` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) in sids:  # after "pid (comm)": state ppid pgrp session ...
            found.append(int(entry.name))
    return found


class LoopbackCluster:
    """See the module doc. `head_cpus`: CPUs of the head node; `worker_nodes`: CPUs of each extra node."""

    def __init__(self, head_cpus: int = 2, worker_nodes: Sequence[int] = (), startup_timeout: float = 180.0) -> None:
        self.head_cpus = head_cpus
        self.worker_nodes = list(worker_nodes)
        self.startup_timeout = startup_timeout
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.token = secrets.token_hex(32)
        self._temp = Path(tempfile.mkdtemp(prefix="aee-ray-"))
        self._procs: list[subprocess.Popen] = []

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a driver (or node) of this cluster."""
        env = dict(os.environ if base is None else base)
        env.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
                    "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token})
        return env

    def _ray(self) -> list[str]:
        return [sys.executable, "-c", "from ray.scripts.scripts import main; import sys; sys.argv[0] = 'ray'; main()"]

    def _launch(self, args: list[str], log: str) -> None:
        out = open(self._temp / log, "wb")
        try:
            self._procs.append(subprocess.Popen(args, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True))
        finally:
            out.close()

    def _wait_for_cpus(self, cpus: int, nodes: int) -> None:
        deadline = time.monotonic() + self.startup_timeout
        probe = ("import ray, sys; ray.init(address=sys.argv[1], _node_ip_address='127.0.0.1', logging_level='ERROR'); "
                 "alive = [n for n in ray.nodes() if n['Alive']]; "
                 "print(len(alive), int(sum(n['Resources'].get('CPU', 0) for n in alive)))")
        last = ""
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Ray node exited ({proc.returncode}) while starting: {self.log_tail()}")
            try:
                out = subprocess.run([sys.executable, "-c", probe, self.address], env=self.env(), capture_output=True,
                                     text=True, timeout=60)
            except subprocess.TimeoutExpired:
                last = "the probe did not connect within 60 s"
                continue
            last = out.stdout.strip() or out.stderr.strip()[-300:]
            if out.returncode == 0 and out.stdout.split() == [str(nodes), str(cpus)]:
                return
            time.sleep(1.0)
        raise RuntimeError(f"the Ray cluster did not come up within {self.startup_timeout:g} s (last: {last})")

    def start(self) -> "LoopbackCluster":
        common = ["--node-ip-address=127.0.0.1", "--disable-usage-stats", "--block", f"--temp-dir={self._temp}"]
        self._launch([*self._ray(), "start", "--head", f"--port={self.port}", f"--num-cpus={self.head_cpus}",
                      "--include-dashboard=false", *common], "head.log")
        try:
            for i, cpus in enumerate(self.worker_nodes):
                self._launch([sys.executable, "-c", _WORKER_NODE, "start", f"--address={self.address}",
                              f"--num-cpus={cpus}", *common], f"node{i}.log")
            self._wait_for_cpus(self.head_cpus + sum(self.worker_nodes), 1 + len(self.worker_nodes))
        except BaseException:
            self.stop()
            raise
        return self

    def log_tail(self, chars: int = 1500) -> str:
        text = "".join(p.read_text(errors="replace") for p in sorted(self._temp.glob("*.log")))
        return text[-chars:]

    def stop(self, grace: float = 5.0) -> None:
        """End every process of the cluster's sessions (module doc); safe to call twice."""
        sids = {p.pid for p in self._procs}  # each `ray start` leads its own session
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            members = _sessions_members(sids)
            if not members:
                break
            for pid in members:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _sessions_members(sids):
                time.sleep(0.2)
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._procs.clear()
        shutil.rmtree(self._temp, ignore_errors=True)

    def __enter__(self) -> "LoopbackCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
