"""Collectors: transports (local, SSH) and tails that turn followed files into Lines.

- base.py: Line, FileStat, CommandResult, the error tree, the Transport, Stream and Tunnel protocols
- transports.py: the transports by name (`local`, `ssh`); local.py (+ stream.py) and ssh/ implement them
- tail.py (+ lines.py: the splitter and the resumable TailState): the exact tail; tail_drain.py reads
  old generations out (renamed away, rotated in between: tail_rotations.py, or the copytruncate copy
  the unread rest of a truncated generation is drained from: tail_copies.py)
- watch.py: `tail -F` wake-ups; gpu.py: the nvidia-smi loop; metrics.py: /metrics through a tunnel
- host.py: HostFollower, one thread per host (backoff.py, health.py with its Quarantine, host_clock.py);
  sinks.py: what it delivers to
"""
