"""`kvwatch demo`: a simulated SGLang server and client on this machine, through the real pipeline."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import tempfile
import threading
import time
import webbrowser
from pathlib import Path
from types import FrameType
from typing import Any

from kvwatch.app.commands.common import DEMO_DATABASE, DEMO_HOST
from kvwatch.app.config import Config, HostConfig, ServerConfig
from kvwatch.app.controller.errors import RestartRefused
from kvwatch.app.controller.operation import Operation
from kvwatch.app.errors import KvwatchError
from kvwatch.app.runner import serve
from kvwatch.app.services import Services
from kvwatch.collectors.base import CollectorError
from kvwatch.simulator.demo import STORY, DemoWorld, config_tables, start_demo_world

NAME = "demo"
HELP = "run a simulated SGLang server and client locally and show them on the dashboard"
log = logging.getLogger(__name__)
ADOPT_TRIES = 30
DEMO_ALERT_FOR = "0s"
DEMO_MIN_STEADY_S = 120.0
MAX_HOSTS = 16  # each simulated host is a server and a client process: this machine's size, not a limit of kvwatch
STALLED_FROM = 3  # a fleet of this many hosts or more has one whose client stalls
STALL_AFTER_S = 150.0  # of story time: after the first config's warm-up
RESTART_WINDOW_S = 600.0  # the controller's default, in story time
CAMPAIGN_PRESETS = ("hicache-0.88", "fp8-0.90", "hicache-0.93")
# At --speed 8 the simulator logs a decode line every ~3 s: the steady detection needs 50 of them.
DEMO_STEP_BUDGET_S = 2400.0
DEMO_CAMPAIGN_BUDGET_S = 14400.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("--speed", type=float, default=1.0, help="simulated seconds per real second")
    parser.add_argument("--workdir", type=Path, help="where the simulated files go (default: a temp dir)")
    parser.add_argument("--hosts", type=int, default=1, metavar="N",
                        help=f"simulate N servers (at most {MAX_HOSTS}): each starts the story at another config, "
                             "and with 3 or more the last one's client stalls; the page opens on the fleet view")


def demo_config(world: DemoWorld, workdir: Path, bind: str = "127.0.0.1", port: int = 8765) -> Config:
    server = ServerConfig(host=bind, port=port, data_dir=str(workdir), database=DEMO_DATABASE)
    return Config(server=server, hosts=(demo_host(world, DEMO_HOST, workdir),))


def fleet_config(worlds: dict[str, DemoWorld], workdir: Path, bind: str = "127.0.0.1", port: int = 8765) -> Config:
    """A host per simulated server, one store. Only the first reads GPUs: the simulated `nvidia-smi` on
    PATH answers for one server."""
    hosts = tuple(demo_host(world, name, world.workdir, gpu=index == 0)
                  for index, (name, world) in enumerate(worlds.items()))
    server = ServerConfig(host=bind, port=port, data_dir=str(workdir), database=DEMO_DATABASE)
    return Config(server=server, hosts=hosts)


def demo_host(world: DemoWorld, name: str, workdir: Path, gpu: bool = True) -> HostConfig:
    # The stand-in `sglang` package cannot be asked for its flags the way a real host is: validate
    # against the bundled schema of the version the simulator writes.
    # The demo's story is minutes long, not hours: its token-usage alert fires on the first sample at or
    # above 0.95 (`for` 0; the default for real hosts stays 2 minutes) so that it fires within the
    # first minute, when the default config has saturated (simulator/demo.py's STORY).
    # The controller's record, lease and last good flags live in the demo's workdir: under the default
    # (~/.kvwatch/demo) every demo on the machine shared one record, so a second demo (or a test) took
    # the first one's server, pid and port for its own.
    # The restart-loop cap's window is story time too: a campaign's restarts (and a crash's rollback)
    # come `speed` times faster than on a real host.
    restart = {"flags_schema": "0.5.23", "state_dir": str(workdir / "controller"),
               "restart_window": RESTART_WINDOW_S / world.speed}
    tables: dict[str, Any] = {**config_tables(), "restart": restart,
                              "alerts": {"token_usage_high": {"for": DEMO_ALERT_FOR}},
                              # each config of the story runs 5-8 minutes: compare them on 2 minutes of
                              # steady state (of story time: the story runs `speed` times faster)
                              "compare": {"min_steady": DEMO_MIN_STEADY_S / world.speed},
                              "campaign": demo_campaign(world.speed)}
    return HostConfig(
        name=name,
        ssh="local",
        server_log=str(world.server_log),
        client_log=str(world.client_log),
        outputs=(world.outputs_glob,),
        target_completions=world.target_completions,
        launch=world.launch,
        **tables,  # validated into the host's tables like a kvwatch.toml's
        gpu=gpu and world.bin_dir is not None,
    )


def demo_campaign(speed: float) -> dict[str, Any]:
    """The seed's campaign as a plan: 0.88 + hicache, fp8 (vetoed), 0.93 (out of memory); budgets in
    story time."""
    return {"presets": list(CAMPAIGN_PRESETS), "step_budget": DEMO_STEP_BUDGET_S / speed,
            "total_budget": DEMO_CAMPAIGN_BUDGET_S / speed}


def use_simulated_gpus(world: DemoWorld) -> None:
    """The GPU collector runs `nvidia-smi`; in the demo, the simulated one comes first on PATH."""
    if world.bin_dir is not None:
        os.environ["PATH"] = f"{world.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def adopt_when_settled(world: DemoWorld, services: Services, host: str = DEMO_HOST) -> None:
    """Once the scripted story is over, hand its server to the controller, so that the page's restarts
    stop it the way they stop a server kvwatch started itself."""

    def adopt() -> None:
        controller = services.controllers.get(host)
        if controller is None or not world.wait_story() or world.wheel_taken_at is not None:
            return
        error: Exception | None = None
        for _ in range(ADOPT_TRIES):  # the new server's command line settles a moment after it starts
            try:
                world.hand_over(lambda pid: controller.adopt(pid, str(world.server_log)))
                log.info("the controller adopted the demo's server")
                return
            except (RestartRefused, CollectorError) as exc:
                error = exc
            time.sleep(1.0)
        log.warning("demo: the controller could not adopt the demo's server: %s", error)

    threading.Thread(target=adopt, name="demo-adopt", daemon=True).start()


def story_notice(at: float) -> str:
    """The page's notice once a person's restart stopped the story (the time in this machine's zone:
    the demo runs where the person is)."""
    return f"the demo's story stopped: you restarted the server at {time.strftime('%H:%M', time.localtime(at))}"


def give_wheel(world: DemoWorld, services: Services, host: str = DEMO_HOST) -> None:
    """A person's restart (page, API) takes the wheel: the story stops before the restart looks at the
    host, and the story's server goes to the controller, which stops it and starts the person's."""
    controller = services.controllers.get(host)
    if controller is None:
        return

    def take(op: Operation) -> str | None:
        playing = world.take_wheel(lambda pid: controller.adopt(pid, str(world.server_log)))
        return story_notice(op.requested_at) if playing else None

    controller.on_takeover = take
    def campaign_started(started: str) -> None:  # a campaign's start takes the wheel as a person's restart does
        if started == host:  # this world's host only (a fleet demo has one world a host)
            world.take_wheel(lambda pid: controller.adopt(pid, str(world.server_log)))

    if services.campaigns is not None:
        services.campaigns.on_start.append(campaign_started)


def wire(worlds: dict[str, DemoWorld], services: Services) -> None:
    for host, world in worlds.items():
        give_wheel(world, services, host)
        adopt_when_settled(world, services, host)


def fleet_worlds(workdir: Path, count: int, speed: float) -> dict[str, DemoWorld]:
    """`count` simulated servers, host `nodeK` under workdir/nodeK, the K-th starting the story at its
    (K mod 3)-th config: a fleet mid-campaign, its hosts on different configs."""
    worlds = {}
    for index in range(count):
        name = f"node{index + 1}"
        worlds[name] = start_demo_world(workdir / name, speed=speed, story=STORY[index % (len(STORY) - 1):])
    return worlds


def stall_later(world: DemoWorld, after_s: float) -> None:
    """The fleet's stalled host: its client freezes `after_s` seconds in, and stays so."""
    timer = threading.Timer(after_s, world.stall_client)
    timer.daemon = True
    timer.start()


def announce_store(workdir: Path) -> None:
    """Printed, not logged: the store outlives the demo, and `report`/`export`/`compare` read it later."""
    print(f"kvwatch demo: workdir {workdir}\n"
          f"kvwatch demo: store {workdir / DEMO_DATABASE} "
          f"(later: kvwatch report --workdir {workdir}, or --db {workdir / DEMO_DATABASE})", flush=True)


def run(args: argparse.Namespace) -> int:
    if args.speed <= 0:
        raise KvwatchError(f"--speed must be positive, got {args.speed}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kvwatch-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if not 1 <= args.hosts <= MAX_HOSTS:
        raise KvwatchError(f"--hosts must be between 1 and {MAX_HOSTS}, got {args.hosts}")
    if args.hosts == 1:
        worlds = {DEMO_HOST: start_demo_world(workdir, speed=args.speed)}
        config = demo_config(worlds[DEMO_HOST], workdir, args.host, args.port)
    else:
        worlds = fleet_worlds(workdir, args.hosts, args.speed)
        config = fleet_config(worlds, workdir, args.host, args.port)
        if args.hosts >= STALLED_FROM:
            stall_later(list(worlds.values())[-1], STALL_AFTER_S / args.speed)
    use_simulated_gpus(next(iter(worlds.values())))
    announce_store(workdir)
    if not args.no_browser:
        threading.Timer(1.5, webbrowser.open, (f"http://{args.host}:{args.port}/",)).start()
    # uvicorn takes SIGINT and SIGTERM while it serves, and raises each again once it has stopped: with
    # Python's default SIGTERM action that killed this process before `world.stop()`, leaving the
    # simulated servers running. Raised as KeyboardInterrupt, both end the demo the same way, cleaned up.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        serve(config, args.host, args.port, after_start=lambda services: wire(worlds, services))
    except KeyboardInterrupt:
        pass  # the person's Ctrl-C (or a SIGTERM): the demo's normal end
    finally:
        for world in worlds.values():
            world.stop()
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
