"""Collectors: transports (local, SSH) and tails that turn followed files into Lines.

- base.py: Line, FileStat, CommandResult, the error tree, the Transport protocol
- local.py / ssh.py: transports (ssh_target: config and ~/.ssh/config; ssh_errors: the one place
  paramiko errors are translated; ssh_exec, ssh_stat, ssh_cursor: exec channels, remote stat shell,
  streaming catch-up reads)
- tail.py (+ lines.py, tail_state.py, tail_copies.py): the exact tail, its resumable TailState, and
  the copytruncate copy it drains the unread rest of a truncated generation from
- watch.py: `tail -F` wake-ups; gpu.py: the nvidia-smi loop; metrics.py: /metrics through a tunnel
- host.py: HostFollower, one thread per host (backoff.py, health.py)
"""
