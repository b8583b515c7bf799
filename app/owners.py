"""Who holds a lease: `hostname:pid[:nonce]`, a kvwatch process named so that another one can tell,
on the same machine, that it has ended (a lease left by kill -9 need not wait out its time).

The store's leases (collectors' hosts, the alert sender) and the controller's lease on a GPU host
(app/controller/remote_helper.py's `lease`) name their holders this way.
"""

from __future__ import annotations

import os
import socket


def this_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def ended_here(owner: str) -> bool:
    """True when `owner` ran on this machine and its process no longer exists. A live pid proves
    nothing (it may have been reused), and another machine's owner cannot be judged: both are False."""
    hostname, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if hostname != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: "does this process exist", nothing is sent
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # exists, run by another user
    return False
