"""The prediction a restart is made with, kept with the run it starts; failures never stop a restart.

`Forecasts.before_announce` asks the Forecast (app/diagnosis through the wiring) while the run that
runs now is still the host's current one; `after_announce` stores the answer under the new run's id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kvwatch.app.controller.operation import Operation
from kvwatch.app.controller.sinks import Forecast
from kvwatch.app.runs.model import Run

log = logging.getLogger(__name__)


class Forecasts:
    def __init__(self, host: str, forecast: Forecast | None, current_run: Callable[[], Run | None]) -> None:
        self.host, self._forecast, self._current_run = host, forecast, current_run

    def before_announce(self, op: Operation) -> str | None:
        """Sets `op.prediction`; returns the id of the run the prediction was made from."""
        if self._forecast is None:
            return None
        try:
            run = self._current_run()
            op.prediction = self._forecast.predict(op.from_flags, op.to_flags)
        except Exception:
            log.exception("%s: the prediction for restart %s failed; restarting without one", self.host, op.op_id)
            return None
        return run.id if run is not None else None

    def after_announce(self, op: Operation, based_on: str | None) -> None:
        if self._forecast is None or op.prediction is None:
            return
        try:
            self._forecast.keep(op.run_id, based_on, op.prediction)
        except Exception:
            log.exception("%s: could not keep the prediction of run %s", self.host, op.run_id)
