"""Text from logs shown as text: a run label made of hostile flag values stays literal in the compare
Markdown (no HTML, no link, the table keeps its columns), and an alert summary cannot mention
@channel or forge a link in a chat webhook's `text`."""

from __future__ import annotations

import copy
import re
from typing import Any

from kvwatch.app.alerts.delivery import message
from kvwatch.app.compare import render
from tests.compare.test_comparison_table import campaign  # noqa: F401  (the module-scoped fixture)

HOSTILE = "--served-model-name <img src=x onerror=alert(1)> [click](javascript:alert(1)) `x` a|b"


def test_a_hostile_label_stays_literal_in_markdown(campaign: dict[str, Any]) -> None:  # noqa: F811
    result = copy.deepcopy(campaign)
    result["runs"][0]["label"] = HOSTILE
    lines = render(result, "markdown").splitlines()
    row = lines[2]
    assert not re.search(r"(?<!\\)<img", row) and "\\<img src=x onerror=alert(1)\\>" in row
    assert not re.search(r"(?<!\\)\]\(javascript", row) and "\\[click\\](javascript:alert(1))" in row
    assert "\\`x\\`" in row and "a\\|b" in row
    unescaped_pipes = row.replace("\\|", "").count("|")
    assert unescaped_pipes == lines[0].count("|")  # still one cell per column
    assert any(line.startswith("- --served-model-name \\<img") for line in lines)
    assert lines[3].startswith("| --mem-fraction-static 0.88 --enable-hierarchical-cache --hicache-size 48 |")


class FakeChange:
    previous = "pending"

    def __init__(self, summary: str) -> None:
        self.payload = {"state": "firing", "summary": summary, "link": "/?host=gpu1", "late": False}


def test_a_webhook_summary_cannot_mention_or_link() -> None:
    body = message(FakeChange("gpu1 <!channel> <https://evil.example|your chart> & more"), "k",  # type: ignore[arg-type]
                   base_url="http://127.0.0.1:8765")
    text = body["text"]
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert "&lt;https://evil.example|your chart&gt;" in text and "&amp; more" in text
    assert text.endswith("<http://127.0.0.1:8765/?host=gpu1|chart>")  # kvwatch's own link stays a link
    assert body["alert"]["summary"].startswith("gpu1 <!channel>")  # the JSON field keeps the raw text
