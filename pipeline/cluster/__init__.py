"""The annotate stage on Ray (`aee run --executor ray`): an optional extra, `pip install '.[ray]'`.

`ray_executor.py` (the driver's side: the Dataset of chunks, results in order, cache merges),
`worker.py` (the actor pool's callable: one judge per actor), `cache.py` (one judge cache for every
worker), `gate.py` (one bound on requests in flight per LLM endpoint, across workers) and
`connect.py` (starting or joining Ray, loopback-only when local). Nothing here is imported unless
a run asks for Ray, and none of these modules imports Ray before a run connects to it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_ray_executor"]


def build_ray_executor(address: str | None = None, workers: int | None = None) -> Any:
    """A `RayExecutor` (pipeline/cluster/ray_executor.py), or InputError when Ray is not installed.
    Ray itself is imported only when the run connects (its settings must be in place before).
    Not named `ray_executor`: importing the submodule of that name sets the package attribute to the
    module, so a second call in one process found a module where the function was."""
    import importlib.util

    from pipeline.cluster.connect import check_address
    from pipeline.errors import InputError

    check_address(address)
    if importlib.util.find_spec("ray") is None:
        raise InputError("--executor ray needs Ray: pip install 'answer-engine-audit[ray]' "
                         "(or `pip install '.[ray]'` in a checkout)")
    from pipeline.cluster.ray_executor import RayExecutor

    return RayExecutor(address=address, workers=workers)
