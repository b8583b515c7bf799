"""Shared fixtures live in tests/fixtures/ and are registered here, explicitly."""

pytest_plugins = ["tests.fixtures.web", "tests.fixtures.sshd", "tests.fixtures.postgres"]
