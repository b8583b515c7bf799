"""A kvwatch stand-in for the kill -9 test: follows one host over SSH into a SQLite sink until killed.

usage: python -m tests.collectors.worker DB SPEC KEY KNOWN_HOSTS LOG
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kvwatch.collectors.host import HostFollower, HostOptions, SourceSpec
from kvwatch.collectors.ssh.target import SshTarget
from kvwatch.collectors.ssh.transport import SshTransport
from tests.collectors.sinks import SqliteSink


def main() -> None:
    db, spec, key, known_hosts, log = sys.argv[1:6]
    target = SshTarget.parse(spec, identity_file=key, known_hosts=known_hosts, ssh_config=None)
    sink = SqliteSink(Path(db))
    follower = HostFollower(
        "h", lambda: SshTransport(target).connect(), [SourceSpec("server_log", log)], sink,
        HostOptions(poll_interval=0.2),
    )
    follower.start()
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
