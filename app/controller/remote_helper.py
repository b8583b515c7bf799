"""Runs ON the GPU host: `python3 - OP ARG...` with this file's text on stdin (nothing is installed there).

Standard library only, Linux /proc only. Every value arrives as one positional argument (the SSH
transport quotes each for the remote shell); nothing here goes through a shell. Each call prints one
JSON object. Ops (all under STATE, the host's kvwatch state directory):

    lease   STATE OP_ID LEASE_S [OWNER]
                                    take the per-host lease (mkdir is atomic); re-entrant for OP_ID;
                                    an expired lease is taken over by an atomic rename; OWNER names
                                    the kvwatch process (hostname:pid) for the next one to judge
    release STATE OP_ID
    status  STATE HOST PORT         the recorded server, whether it is ours and alive, port, good flags
    stop    STATE TIMEOUT           SIGTERM to the recorded process group, SIGKILL after TIMEOUT s,
                                    then wait for its port to be free; only if pid, start time and
                                    command line all match the record (never by pattern)
    start   STATE RECORD            spawn RECORD["argv"] in a new session (setsid), stdin /dev/null,
                                    stdout+stderr to the new log RECORD["log"]; refuse when ours is
                                    alive or RECORD's port is taken; write the record atomically;
                                    a repeated start of the same run_id is answered, not redone
    check   STATE OFFSET PATH       alive?, the run's log since OFFSET, HTTP status of GET PATH

The record (current.json) holds run_id, argv, env, log, flags, host and port of the server it
started, plus pid, start time and command line as /proc showed them right after the start.
    promote STATE RUN_ID            the current record becomes the last good one
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

MAX_CHUNK = 256 * 1024


def read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (FileNotFoundError, ValueError):
        return None


def write_json(path: str, value: Any) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time in clock ticks since boot) or None when there is no such pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0], int(fields[2]), int(fields[19])


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [part.decode("utf-8", "surrogateescape") for part in raw.split(b"\0")[:-1]]


def settled_cmdline(pid: int) -> list[str]:
    """The command line once exec has finished: right after the spawn /proc can still show it empty."""
    deadline = time.time() + 5
    while not (args := cmdline(pid)) and time.time() < deadline and proc_stat(pid) is not None:
        time.sleep(0.01)
    return args


def is_ours(record: Any) -> bool:
    """The recorded process is still that process: same pid, start time and command line, not a zombie."""
    if not isinstance(record, dict) or not record.get("pid"):
        return False
    stat = proc_stat(int(record["pid"]))
    if stat is None or stat[0] in ("Z", "X"):
        return False
    return stat[2] == record.get("starttime") and cmdline(int(record["pid"])) == record.get("cmdline")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group: workers that outlived the leader count too."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                members.append(int(entry))
    return members


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def op_lease(state: str, op_id: str, lease_s: str, owner: str = "") -> dict[str, Any]:
    lease = os.path.join(state, "lease")
    for _ in range(2):
        try:
            os.mkdir(lease, 0o700)
        except FileExistsError:
            holder = read_json(os.path.join(lease, "owner.json"))
            if not isinstance(holder, dict):
                # Another taker is between its mkdir and writing owner.json: the lease is as young as
                # the directory, never stale (taking it here broke the winner's write).
                try:
                    holder = {"at": os.stat(lease).st_mtime}
                except FileNotFoundError:
                    continue
            if holder.get("op_id") == op_id:
                return {"ok": True, "holder": holder}
            if time.time() - float(holder.get("at", 0)) < float(holder.get("lease_s", lease_s)):
                return {"ok": False, "holder": holder}
            stale = f"{lease}.stale.{op_id}"
            try:
                os.rename(lease, stale)  # only one taker wins the rename of an expired lease
            except OSError:
                return {"ok": False, "holder": holder}
            shutil.rmtree(stale, ignore_errors=True)
            continue
        holder = {"op_id": op_id, "at": time.time(), "lease_s": float(lease_s), "pid": os.getpid(), "owner": owner}
        write_json(os.path.join(lease, "owner.json"), holder)
        return {"ok": True, "holder": holder}
    return {"ok": False, "holder": None}


def op_release(state: str, op_id: str) -> dict[str, Any]:
    lease = os.path.join(state, "lease")
    holder = read_json(os.path.join(lease, "owner.json")) or {}
    if holder.get("op_id") != op_id:
        return {"ok": False, "holder": holder}
    shutil.rmtree(lease, ignore_errors=True)
    return {"ok": True}


def op_status(state: str, host: str, port: str) -> dict[str, Any]:
    record = read_json(os.path.join(state, "current.json"))
    return {"record": record, "ours": is_ours(record), "port_open": port_open(host, int(port)),
            "good": read_json(os.path.join(state, "good.json")),
            "lease": read_json(os.path.join(state, "lease", "owner.json"))}


def wait_gone(pgid: int, deadline: float) -> bool:
    while time.time() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.1)
    return not group_members(pgid)


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group may be gone already
        os.killpg(pgid, signum)


def op_stop(state: str, timeout: str) -> dict[str, Any]:
    record = read_json(os.path.join(state, "current.json"))
    if not is_ours(record):
        how = "none" if record is None else "not running (or the pid now belongs to another process)"
        return {"stopped": how, "pid": None, "left": []}
    pgid = int(record["pid"])  # started with setsid: the server leads its own process group
    how = "term"
    signal_group(pgid, signal.SIGTERM)
    if not wait_gone(pgid, time.time() + float(timeout)):
        how = "kill"
        signal_group(pgid, signal.SIGKILL)
        wait_gone(pgid, time.time() + 10)
    host, port = record["host"], int(record["port"])
    deadline = time.time() + 15
    while port_open(host, port) and time.time() < deadline:
        time.sleep(0.2)
    record["ended_at"] = time.time()
    write_json(os.path.join(state, "current.json"), record)
    return {"stopped": how, "pid": pgid, "left": group_members(pgid), "port_free": not port_open(host, port)}


def op_start(state: str, record_json: str) -> dict[str, Any]:
    record = json.loads(record_json)
    current = read_json(os.path.join(state, "current.json"))
    alive = is_ours(current)
    if isinstance(current, dict) and current.get("run_id") == record["run_id"]:
        return {"pid": current.get("pid"), "log": current.get("log"), "already": True, "alive": alive}
    if alive:
        return {"error": f"kvwatch's server (pid {current['pid']}) is still running"}
    host, port = record["host"], int(record["port"])
    if port_open(host, port):
        return {"error": f"port {port} is in use by a process kvwatch did not start"}
    log = os.path.expanduser(record["log"])
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    with open(log, "x", encoding="utf-8") as out:  # a new file per run: never append to an old run's log
        child = subprocess.Popen(record["argv"], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True, close_fds=True, env={**os.environ, **record.get("env", {})})
    stat = proc_stat(child.pid)
    record.update(pid=child.pid, starttime=stat[2] if stat else None, cmdline=settled_cmdline(child.pid), log=log)
    write_json(os.path.join(state, "current.json"), record)
    return {"pid": child.pid, "log": log, "already": False, "alive": True}


def op_check(state: str, offset: str, path: str) -> dict[str, Any]:
    record = read_json(os.path.join(state, "current.json")) or {}
    text, new_offset = "", int(offset)
    try:
        with open(record.get("log", ""), "rb") as handle:
            handle.seek(new_offset)
            chunk = handle.read(MAX_CHUNK)
        cut = chunk.rfind(b"\n") + 1  # complete lines only
        text, new_offset = chunk[:cut].decode("utf-8", "replace"), new_offset + cut
    except OSError:
        pass
    alive = is_ours(record)
    answer = health(record["host"], int(record["port"]), path) if alive else None
    return {"run_id": record.get("run_id"), "alive": alive, "text": text, "offset": new_offset, "health": answer}


def health(host: str, port: int, path: str) -> int | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via an http_proxy
    try:
        with opener.open(f"http://{host}:{port}{path}", timeout=3) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (OSError, ValueError):
        return None


def op_adopt(state: str, record_json: str) -> dict[str, Any]:
    """Take over a server kvwatch did not start: from now on it is stopped like one it started."""
    record = json.loads(record_json)
    pid = int(record["pid"])
    stat = proc_stat(pid)
    if stat is None or stat[0] in ("Z", "X"):
        return {"error": f"no running process {pid}"}
    if stat[1] != pid:  # stop signals the process group; a group it does not lead could be anyone's
        return {"error": f"process {pid} does not lead its own process group (start it with setsid)"}
    current = read_json(os.path.join(state, "current.json"))
    if is_ours(current) and int(current["pid"]) != pid:
        return {"error": f"kvwatch's server (pid {current['pid']}) is still running"}
    record.update(starttime=stat[2], cmdline=settled_cmdline(pid), argv=cmdline(pid))
    write_json(os.path.join(state, "current.json"), record)
    write_json(os.path.join(state, "good.json"), record)
    return {"pid": pid, "adopted": True}


def op_promote(state: str, run_id: str) -> dict[str, Any]:
    record = read_json(os.path.join(state, "current.json"))
    if not isinstance(record, dict) or record.get("run_id") != run_id:
        return {"ok": False}
    write_json(os.path.join(state, "good.json"), record)
    return {"ok": True}


OPS: dict[str, Callable[..., dict[str, Any]]] = {
    "lease": op_lease, "release": op_release, "status": op_status, "stop": op_stop, "start": op_start,
    "check": op_check, "promote": op_promote, "adopt": op_adopt,
}


def main(argv: list[str]) -> int:
    op, state, args = argv[0], os.path.expanduser(argv[1]), argv[2:]
    os.makedirs(state, mode=0o700, exist_ok=True)
    print(json.dumps(OPS[op](state, *args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
