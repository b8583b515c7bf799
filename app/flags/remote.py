"""The flag schema of the sglang actually installed on a host, asked over its transport.

First the version (importlib.metadata, no torch import, well under a second); then, once per version
and process, the full extraction (imports torch: seconds). The cache is keyed by version only, so a
fleet on one version pays for one extraction.
"""

from __future__ import annotations

import threading

from kvwatch.app.flags.extract import Runner, extract_schema, sglang_version
from kvwatch.app.flags.schema import Schema


class SchemaCache:
    """Schemas by sglang version. Thread-safe; an extraction runs once per version at a time."""

    def __init__(self) -> None:
        self._schemas: dict[str, Schema] = {}
        self._lock = threading.Lock()

    def get(self, version: str) -> Schema | None:
        with self._lock:
            return self._schemas.get(version)

    def put(self, schema: Schema) -> None:
        with self._lock:
            self._schemas[schema.version] = schema


DEFAULT_CACHE = SchemaCache()


def remote_schema(transport: Runner, python: str = "python3", cache: SchemaCache = DEFAULT_CACHE) -> Schema:
    """The schema of the sglang that `python` imports on that host. Raises CollectorError."""
    version = sglang_version(transport, python)
    cached = cache.get(version)
    if cached is not None:
        return cached
    schema = Schema.from_document(extract_schema(transport, python))
    cache.put(schema)
    return schema
