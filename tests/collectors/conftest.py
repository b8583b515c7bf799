"""The sshd fixture comes from the shared plugin; imported here until tests/conftest.py registers it."""

from __future__ import annotations

from tests.fixtures.sshd import sshd

__all__ = ["sshd"]
