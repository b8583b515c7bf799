"""`pip install` gives a working kvwatch: one import root, the page and its data inside the wheel.

The wheel is built from the sdist (as `python -m build` does), installed into a venv of its own with
its declared dependencies, and run from a directory that has nothing of this checkout.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.processes import stop_group
from tests.fixtures.web import free_port

# The module's fixtures build the wheel (up to 600 s) and pip-install it into a fresh venv (up to 900 s):
# the first test waits on both, so the suite's 300-s default would cut them short on a loaded machine.
pytestmark = pytest.mark.timeout(1800)
ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"app": "kvwatch.app", "collectors": "kvwatch.collectors", "parsers": "kvwatch.parsers",
           "simulator": "kvwatch.simulator"}
DECODE = ("[2026-02-24 12:49:14 DP2 TP2] Decode batch, #running-req: 72, #token: 153179, token usage: 0.96, "
          "cuda graph: True, gen throughput (token/s): 1510.37, #queue-req: 79, \n")


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path


@dataclass(frozen=True)
class Installed:
    bin: Path
    site_packages: Path
    outside: Path  # a working directory with nothing of the checkout


def expected_packages() -> set[str]:
    """Every folder below the four roots that holds Python code, as its `kvwatch.` package name."""
    names = set()
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in parts:
                names.add(".".join((package, *parts)))
    return names


def test_pyproject_lists_every_package_under_the_kvwatch_root() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(setuptools["packages"]) == expected_packages() | {"kvwatch.static"}
    assert setuptools["package-dir"] == {**{pkg: folder for folder, pkg in FOLDERS.items()}, "kvwatch.static": "static"}
    for package in expected_packages():  # a namespace folder would install without its code
        folder = ROOT.joinpath(package.split(".")[1], *package.split(".")[2:])
        assert (folder / "__init__.py").is_file(), folder


def test_package_metadata_is_what_a_registry_accepts() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["readme"] == "README.md" and (ROOT / "README.md").is_file()
    assert project["license"] == "MIT" and all((ROOT / f).is_file() for f in project["license-files"])
    assert project["requires-python"].startswith(">=3.11")
    assert any(c.startswith("License") or c.startswith("Programming Language") for c in project["classifiers"])
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])
    assert project["scripts"]["kvwatch"] == "kvwatch.app.cli:main"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return Built(wheel=next(out.glob("kvwatch-*.whl")), sdist=next(out.glob("kvwatch-*.tar.gz")))


def test_the_wheel_installs_nothing_but_kvwatch(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = wheel.namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"kvwatch"}
    for needed in ("kvwatch/static/index.html", "kvwatch/static/app.js", "kvwatch/static/style.css",
                   "kvwatch/app/flags/sglang-0.5.23.json", "kvwatch/app/controller/remote_helper.py",
                   "kvwatch/simulator/demo.py"):
        assert needed in names, needed
    assert not any(n.startswith("kvwatch/__init__") for n in names)  # a namespace: no root module to collide


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    home = tmp_path_factory.mktemp("clean-venv")
    venv.create(home / "v", with_pip=True)
    bin_dir = home / "v" / "bin"
    done = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(built.wheel)],
                          capture_output=True, text=True, timeout=900, check=False, cwd=home, env=_clean_env())
    assert done.returncode == 0, done.stderr[-3000:]
    site = next((home / "v" / "lib").glob("python3*/site-packages"))
    outside = tmp_path_factory.mktemp("elsewhere")
    return Installed(bin=bin_dir, site_packages=site, outside=outside)


def _clean_env() -> dict[str, str]:
    """The environment without anything that would put this checkout on the import path."""
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}


def test_site_packages_holds_kvwatch_and_no_generic_names(installed: Installed) -> None:
    record = next(installed.site_packages.glob("kvwatch-*.dist-info")) / "RECORD"
    tops = {line.split(",")[0].split("/")[0] for line in record.read_text().splitlines() if line}
    assert {t for t in tops if not t.endswith(".dist-info") and t != ".."} == {"kvwatch"}  # ..: bin/kvwatch
    for generic in ("app", "collectors", "parsers", "simulator", "static"):
        assert not (installed.site_packages / generic).exists(), generic


def test_installed_version_and_parse(installed: Installed) -> None:
    version = subprocess.run([str(installed.bin / "kvwatch"), "--version"], capture_output=True, text=True,
                             cwd=installed.outside, env=_clean_env(), timeout=60, check=False)
    assert version.returncode == 0 and re.fullmatch(r"kvwatch \d+\.\d+\.\d+\S*\n", version.stdout), version
    log = installed.outside / "server.log"
    log.write_text(DECODE)
    done = subprocess.run([str(installed.bin / "kvwatch"), "parse", str(log)], capture_output=True, text=True,
                          cwd=installed.outside, env=_clean_env(), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.splitlines()[0])
    assert record["kind"] == "decode" and record["tags"] == {"DP": 2, "TP": 2}
    assert record["running_req"] == 72 and record["token_usage"] == 0.96 and record["queue_req"] == 79


@pytest.fixture(scope="module")
def demo_url(installed: Installed) -> Iterator[str]:
    port = free_port()
    log = (installed.outside / "demo.log").open("wb")
    proc = subprocess.Popen([str(installed.bin / "kvwatch"), "demo", "--no-browser", "--port", str(port),
                             "--workdir", str(installed.outside / "demo")],
                            cwd=installed.outside, env=_clean_env(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url + "/api/hosts", proc, installed.outside / "demo.log")
        yield url
    finally:
        stop_group(proc)
        log.close()


def _wait_for(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    import time

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"kvwatch demo exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"kvwatch demo never answered {url}:\n{log.read_text()[-3000:]}")


def _get(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.status, answer.headers.get("content-type", ""), answer.read()


def _module_imports(source: str) -> set[str]:
    """Relative specifiers of static and dynamic ES module imports."""
    return set(re.findall(r"""(?:from|import)\s*\(?\s*["'](\.{1,2}/[^"']+)["']""", source))


def test_installed_demo_serves_the_page_and_everything_it_references(demo_url: str) -> None:
    status, kind, body = _get(demo_url + "/")
    assert status == 200 and kind.startswith("text/html")
    page = body.decode()
    referenced = set(re.findall(r"""<script[^>]*\ssrc=["']([^"']+)["']""", page))
    referenced |= set(re.findall(r"""<link[^>]*\shref=["']([^"']+)["']""", page))
    assert {"/static/app.js", "/static/style.css", "/vendor/plotly.min.js"} <= referenced
    seen: set[str] = set()
    todo = sorted(referenced)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        status, kind, body = _get(demo_url + path)
        assert status == 200 and len(body) > 0, path
        if path.endswith(".js") and path.startswith("/static/"):
            assert "javascript" in kind, (path, kind)
            base = path.rsplit("/", 1)[0]
            todo += [os.path.normpath(f"{base}/{spec}") for spec in _module_imports(body.decode())]
        elif path.endswith(".css"):
            assert kind.startswith("text/css"), (path, kind)
    assert len([p for p in seen if p.endswith(".js")]) >= 5  # the page's modules were followed
    status, kind, body = _get(demo_url + "/api/hosts")
    hosts = json.loads(body)
    assert status == 200 and [h["name"] for h in hosts] == ["demo"]


def test_the_checkout_is_not_on_the_installed_path(installed: Installed) -> None:
    probe = ("import kvwatch.app, kvwatch.static, sys; "
             "print(kvwatch.app.__file__); print(list(kvwatch.static.__path__)[0])")
    done = subprocess.run([str(installed.bin / "python"), "-c", probe], capture_output=True, text=True,
                          cwd=installed.outside, env=_clean_env(), timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        assert Path(line).resolve().is_relative_to(installed.site_packages.resolve()), line
    for name in ("app", "parsers", "collectors", "simulator"):
        gone = subprocess.run([str(installed.bin / "python"), "-c", f"import {name}"], capture_output=True,
                              cwd=installed.outside, env=_clean_env(), timeout=60, check=False)
        assert gone.returncode != 0, name


def test_every_import_in_the_wheel_resolves_inside_it(built: Built) -> None:
    """No module of the wheel imports a root that the wheel does not install."""
    ours = {"app", "collectors", "parsers", "simulator"}
    with zipfile.ZipFile(built.wheel) as wheel:
        for name in wheel.namelist():
            if not name.endswith(".py"):
                continue
            tree = ast.parse(wheel.read(name))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    assert node.module.split(".")[0] not in ours, (name, node.module)
                elif isinstance(node, ast.Import):
                    assert not {a.name.split(".")[0] for a in node.names} & ours, name
