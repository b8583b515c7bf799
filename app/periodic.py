"""The background-loop helper, `collectors.periodic.Periodic`, under the app's name for it: the app's
loops and the collectors' host loop share one implementation, and collectors/ cannot import app/."""

from kvwatch.collectors.periodic import Interval, Periodic

__all__ = ["Interval", "Periodic"]
