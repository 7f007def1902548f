"""The report as a person sees it: headless Chromium renders the page of the third of three
nights; its DOM must carry the headline numbers, replay commands and the broker's code covered
night by night, and its screenshot the colours the charts are drawn in."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from html import unescape
from pathlib import Path

import pytest
from PIL import Image

from amqpfuzz.reports.charts import BAR_COLOUR, HEAT_COLOURS, TREND_COLOURS

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--force-color-profile=srgb",
]


def _chromium(page: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM, "chromium is not installed (make check installs Debian's chromium)"
    done = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def rendered(
    three_nights: tuple[Path, list[Path]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str, Image.Image]:
    output, _ = three_nights
    page = output / "report.html"
    tmp = tmp_path_factory.mktemp("chromium")
    dom = _chromium(page, tmp, "--dump-dom").stdout
    shot = tmp / "report.png"
    _chromium(page, tmp, f"--screenshot={shot}", "--window-size=1280,4000")
    return page.read_text(), dom, Image.open(shot).convert("RGB")


def _figure(dom: str, name: str) -> str:
    found = re.search(rf'data-figure="{name}">([^<]*)<', dom)
    assert found, f"no headline figure {name}"
    return unescape(found.group(1))


def test_headline_numbers_render(rendered: tuple[str, str, Image.Image]) -> None:
    _, dom, _ = rendered
    assert "amqpfuzz nightly report: 2026-03-03" in dom
    # night 3: RabbitMQ ran 1 pass + sig-A + sig-C, GarageMQ 1 pass + sig-G
    figures = {name: _figure(dom, name) for name in ("cases", "failures", "signatures")}
    assert figures == {"cases": "5", "failures": "3", "signatures": "3"}
    statuses = {name: _figure(dom, name) for name in ("new", "regressed", "fixed")}
    assert statuses == {"new": "0", "regressed": "1", "fixed": "1"}
    assert _figure(dom, "targets") == "2" and _figure(dom, "runs") == "2"


def test_regressed_failure_comes_first_with_its_replay_command(
    rendered: tuple[str, str, Image.Image],
) -> None:
    _, dom, _ = rendered
    text = unescape(re.sub(r"<[^>]+>", " ", dom))
    replay = "amqpfuzz replay repro/sig-A-2026-03-03.case"
    assert replay in text
    recurring = text.index("Recurring failures")
    assert text.index(replay) < recurring < text.index("sig-C", recurring)


def test_the_brokers_code_covered_night_by_night(rendered: tuple[str, str, Image.Image]) -> None:
    """Each night's RabbitMQ run covered one line more of rabbit_reader (coverage_records
    .night_of): night 3's page has the three nights' trend, read back from the tables."""
    _, dom, _ = rendered
    section = dom[dom.index('id="broker-coverage"') :]
    section = section[: section.index("<h2")]
    assert "rabbitmq · AMQP 0-9-1" in section and "7 of 18 (39%)" in section
    (trend,) = re.findall(r'<svg class="chart trend".*?</svg>', section)
    assert re.findall(r"<title>([^<]*)</title>", trend) == [
        "2026-03-01: 5", "2026-03-02: 6", "2026-03-03: 7",
    ]  # fmt: skip
    assert "auth_fail/5" in section and "garagemq" not in section  # (GarageMQ: not measured)


def test_nothing_is_loaded_from_anywhere(rendered: tuple[str, str, Image.Image]) -> None:
    source, _, _ = rendered
    assert "<script" not in source
    # links within the page (a matrix cell's to its failures) are all the page has
    assert not re.search(r"""src\s*=|href\s*=\s*"(?!#)|url\(|@import""", source)


def test_screenshot_shows_the_charts(rendered: tuple[str, str, Image.Image]) -> None:
    _, _, image = rendered
    pixels = Counter({rgb: n for n, rgb in image.getcolors(maxcolors=1 << 24) or []})

    def count(colour: str) -> int:
        rgb = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
        return pixels[rgb]

    for name, colour in TREND_COLOURS.items():
        assert count(colour) >= 40, f"trend chart {name} ({colour}) is not on the screen"
    assert count(BAR_COLOUR) >= 200, "coverage bars are not on the screen"
    green, red = HEAT_COLOURS[0][1], HEAT_COLOURS[-1][1]
    # night 3: every basic.* case failed on both targets, every queue.* case passed
    assert count(green) >= 4000 and count(red) >= 4000, "heatmap cells are not on the screen"
