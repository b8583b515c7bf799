"""Which files hold the generations between ours and the current one, on literal directory listings
(collectors/tail_rotations.py); the tail reading them is in test_tail.py."""

from __future__ import annotations

from kvwatch.collectors.tail_rotations import between

NUMBERED = ["/d/server.log", "/d/server.log.1", "/d/server.log.2", "/d/server.log.3.gz", "/d/server.log.4",
            "/d/other.log.1", "/d/server.log.1.bak", "/d/server.logger.1"]
DATED = ["/d/server.log", "/d/server.log-20261201", "/d/server.log-20261202.gz", "/d/server.log-20261203",
         "/d/server.log-2026120312", "/d/server.log.1", "/d/server.log-2026-12-04"]


def test_numbered_newer_is_a_smaller_number_oldest_first() -> None:
    assert between("/d/server.log", "/d/server.log.4", NUMBERED) == [
        "/d/server.log.3.gz", "/d/server.log.2", "/d/server.log.1"]
    assert between("/d/server.log", "/d/server.log.2", NUMBERED) == ["/d/server.log.1"]


def test_one_rotation_has_nothing_between() -> None:
    assert between("/d/server.log", "/d/server.log.1", NUMBERED) == []


def test_savelog_counts_from_zero() -> None:
    assert between("/d/app.log", "/d/app.log.1", ["/d/app.log", "/d/app.log.0", "/d/app.log.1"]) == ["/d/app.log.0"]


def test_dated_newer_sorts_later_within_one_dateformat() -> None:
    assert between("/d/server.log", "/d/server.log-20261201", DATED) == [
        "/d/server.log-20261202.gz", "/d/server.log-20261203"]
    assert between("/d/server.log", "/d/server.log-2026-12-01", DATED) == ["/d/server.log-2026-12-04"]
    assert between("/d/server.log", "/d/server.log-20261203", DATED) == []


def test_a_name_of_no_rotation_scheme_guesses_nothing() -> None:
    listing = ["/d/server.log", "/d/server.log.old", "/d/server.log.txt", "/d/server.log.new"]
    assert between("/d/server.log", "/d/server.log.old", listing) == []
    assert between("/d/server.log", "/d/elsewhere.log.2", NUMBERED) == []
