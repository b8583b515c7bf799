"""Collectors: transports (local, SSH) and tails that turn followed files into Lines."""
