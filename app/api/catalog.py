"""GET /api/catalog (read-only): the metric catalog and the page's charts, so the page builds and
labels its charts from it.

`?host=H` adds, per metric the host has stored, what its host series shows (`combine`: rule, parts,
label such as "sum over 4 DP ranks"), counted from the parts stored for it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kvwatch.app.api.deps import ServicesDep, require_host
from kvwatch.app.metrics_catalog import CATALOG, describe, info, page_charts
from kvwatch.app.metrics_catalog.names import by_constant
from kvwatch.app.store.base import Store

router = APIRouter(tags=["catalog"])


@router.get("/api/catalog")
def get_catalog(services: ServicesDep, host: str | None = None) -> dict[str, Any]:
    """`metrics`: every catalog entry (name, unit, label, chart, over_ranks, over_gpus, weight,
    extras, drops_silent, base); `charts`: the page's charts in order (id, title, unit, y_format,
    y_range, threshold, per_gpu, traces: metric, name, label, unit, axis, hidden); `names`: the
    metric names the page's code reads by name, under their constants (GEN_THROUGHPUT: gen_throughput);
    with `host`, `host_metrics`: each stored metric's `combine`."""
    out: dict[str, Any] = {"metrics": [entry.as_dict() for entry in CATALOG.values()], "charts": page_charts(),
                           "names": by_constant()}
    if host is not None:
        require_host(services, host)
        out["host"] = host
        out["host_metrics"] = {m: host_combine(services.store, host, m) for m in services.store.metrics(host)}
    return out


def host_combine(store: Store, host: str, metric: str, rank: str = "", parts_from: str | None = None) -> dict[str, Any]:
    """What the host series of `metric` shows: its parts are those stored for the series it derives
    from (`parts_from`, else the catalog's base: `gpu_temp_c` for `gpu_temp_c_max`)."""
    base = parts_from or info(metric).base or metric
    return describe(metric, store.ranks(host, base), rank)
