"""Diagnosis and what-if prediction for one host's serving run.

Pure modules: snapshot (the window's signals), verdicts (the rules), diagnose (lifecycle + rules),
suggest (advice), memory (KV pool sizing), throughput (throughput vs concurrency), predict (what-if).
Store side: reading; entry points: service. The price of a config choice, one sentence at the end
of a comparison, is app/compare/price.py.
"""

from __future__ import annotations

from kvwatch.app.diagnosis.diagnose import Diagnosis, diagnose
from kvwatch.app.diagnosis.service import diagnose_host, host_verdict, predict_host
from kvwatch.app.diagnosis.verdicts import VERDICTS

__all__ = ["VERDICTS", "Diagnosis", "diagnose", "diagnose_host", "host_verdict", "predict_host"]
