"""What /metrics exposes is declared in the catalog (metrics_catalog/exposed.py) and names only
catalogued series, each under one Prometheus name."""

from __future__ import annotations

from kvwatch.app.metrics_catalog import CATALOG
from kvwatch.app.metrics_catalog.exposed import EXPOSED


def test_every_exposed_series_is_catalogued_once_under_a_prometheus_name() -> None:
    assert {e.metric for e in EXPOSED} <= set(CATALOG)
    names = [e.name for e in EXPOSED]
    assert len(set(names)) == len(names) and all(n.startswith("kvwatch_") for n in names)
    assert len({e.metric for e in EXPOSED}) == len(EXPOSED)


def test_every_name_the_catalog_gives_out_is_an_entry() -> None:
    from kvwatch.app.metrics_catalog import names

    given = {value for key, value in vars(names).items() if key.isupper()}
    assert given and given <= set(CATALOG)
