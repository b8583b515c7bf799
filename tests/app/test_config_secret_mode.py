"""A kvwatch.toml that holds the control token (or a database password) is refused while every user of
the machine can read it; the same file at 0600, or without the secret, loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvwatch.app.config import load_config
from kvwatch.app.errors import ConfigError


@pytest.mark.parametrize("server", [
    'token = "a-long-control-token-0123456789"',
    'database = "postgresql://kv:pa55word@db.internal/kvwatch"',
])
def test_a_world_readable_config_with_a_secret_is_refused(tmp_path: Path, server: str) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text(f"[server]\n{server}\n")
    path.chmod(0o644)
    with pytest.raises(ConfigError, match=r"readable by every user \(mode 0644\); chmod 600") as caught:
        load_config(path)
    assert "0123456789" not in str(caught.value) and "pa55word" not in str(caught.value)
    path.chmod(0o600)
    assert load_config(path).server.port > 0
    path.chmod(0o640)  # group-readable: a deliberate sharing, not every user
    assert load_config(path).server.port > 0


def test_a_world_readable_config_without_secrets_loads(tmp_path: Path) -> None:
    path = tmp_path / "kvwatch.toml"
    path.write_text('[server]\nport = 9001\ndatabase = "postgresql://kv@db.internal/kvwatch"\n')
    path.chmod(0o644)
    assert load_config(path).server.port == 9001
