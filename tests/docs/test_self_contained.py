"""The project refers to nothing outside its repository: a user who installs kvwatch has every file a
comment, docstring or document points to. The contracts live in docs/."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A path into a folder outside the repository (the brief's `shared` folder), or the brief by name.
OUTSIDE = re.compile(r"\bshared[/]|\bDESIGN\.md\b")
LINK = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")


def project_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_no_file_refers_outside_the_repository() -> None:
    offenders = []
    for path in project_files():
        if path == Path(__file__).resolve():
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        offenders += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                      if OUTSIDE.search(line)]
    assert offenders == []


def test_every_relative_link_of_the_docs_and_readme_resolves() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) >= 5
    for page in pages:
        for target in LINK.findall(page.read_text()):
            assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_the_readme_links_every_doc() -> None:
    readme = (ROOT / "README.md").read_text()
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{doc.name})" in readme, doc.name
