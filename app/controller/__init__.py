"""Restarting a host's server with a validated config, over SSH."""
