"""pyarrow without pandas, for commands that never hand pyarrow a pandas object (`kvwatch parse`)."""

from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

import pyarrow as pa


def pyarrow_without_pandas() -> None:
    """Spare `kvwatch parse` the import of pandas (0.2 s of CPU, a tenth of a 1M-line parse).

    pyarrow imports pandas on its first `pa.array` call, only to ask whether the value is a pandas
    object; nothing here passes one. pyarrow keeps the answer, so it is asked once while pandas cannot
    be imported. Should anything in this process import pandas later, pyarrow is told right after
    (`_PandasBack`), so pandas objects convert as usual. With pandas already imported, nothing changes.
    """
    if "pandas" in sys.modules:
        return
    sys.meta_path.insert(0, _NoPandas)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(_NoPandas)
    sys.meta_path.insert(0, _PandasBack)


class _NoPandas:
    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name == "pandas":
            raise ImportError("pandas is not imported by kvwatch parse")


class _PandasBack:
    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name != "pandas":
            return None
        sys.meta_path.remove(_PandasBack)
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None:
            return spec
        load = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            shim = getattr(pa.lib, "_pandas_api", None)  # pyarrow's lazy pandas importer
            if shim is not None:
                shim.pd  # noqa: B018  (asking for it makes pyarrow import pandas, now there)

        setattr(loader, "exec_module", exec_module)  # noqa: B010  (a method, on this one loader)
        return spec
