"""The HTML report in a real headless browser (Chromium): the page renders its matrix from disk.
A screenshot must show the passing and failing cells' colours, and the DOM the browser built must
hold a cell per case, profile and version, each a ``details`` element.

Scripts are off by the page's own policy (its Content-Security-Policy allows no script source at
all), which is what the browser runs it under here. Chromium's ``--blink-settings=
scriptEnabled=false`` cannot be used: headless ``--screenshot`` and ``--dump-dom`` then write
nothing.

Slow (a browser start takes seconds). Skips, saying so, when no Chromium is installed: ``make
browser-env`` installs Debian's package; ``SCRIPTORIUM_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest

from scriptorium import Engine
from scriptorium.evals.html_report import write_html
from tests.evals.project import BAD, GOOD, fake, make_project, write_tests
from tests.evals.test_html_report import Page

pytestmark = pytest.mark.slow

PASSED_RGB = (0xDC, 0xF5, 0xE3)
FAILED_RGB = (0xFB, 0xDC, 0xDC)


def _chromium() -> str:
    found = os.environ.get("SCRIPTORIUM_CHROMIUM") or next(
        (
            path
            for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
            if (path := shutil.which(name))
        ),
        None,
    )
    if not found:
        pytest.skip("no Chromium installed (make browser-env, or set SCRIPTORIUM_CHROMIUM)")
    return found


def _browser(chromium: str, home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    flags = [
        "--headless",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        f"--user-data-dir={home / 'profile'}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return subprocess.run(
        [chromium, *flags, *args],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(home)},
    )


def _pixels(png: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, data, header = 8, b"", b""
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        kind = png[offset + 4 : offset + 8]
        body = png[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            data += body
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0)
    assert colour in (2, 6)  # RGB or RGBA
    step = 3 if colour == 2 else 4
    raw = zlib.decompress(data)
    stride = width * step
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up = previous[i]
            corner = previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        previous = line
    pixels = [(row[x], row[x + 1], row[x + 2]) for row in rows for x in range(0, stride, step)]
    return width, height, pixels


def test_the_report_renders_its_matrix_in_a_headless_browser(tmp_path: Path) -> None:
    chromium = _chromium()
    old = make_project(tmp_path / "old", flaky2=fake(json.dumps(BAD)))
    root = make_project(tmp_path / "project", flaky2=fake(json.dumps(GOOD)))
    write_tests(
        root,
        "contact",
        """
        repeat: 2
        cases:
          - name: finds ada
            artifacts: {document: ../docs/ada.txt}
            expect: {pointer: {/name: Ada Lovelace}}
          - name: "<b>not bold</b>"
            artifacts: {document: ../docs/ada.txt}
            expect: {contains: Lovelace}
        """,
    )
    report = Engine(root).test(profiles=["good", "bad", "flaky2"], against=old)
    page = tmp_path / "out" / "report.html"
    write_html(report, page)
    home = tmp_path / "home"
    home.mkdir()
    shot = tmp_path / "shot.png"
    done = _browser(
        chromium, home, f"--screenshot={shot}", "--window-size=1400,1000", page.as_uri()
    )
    assert shot.is_file(), done.stderr.decode("utf-8", "replace")[-2000:]
    width, height, pixels = _pixels(shot.read_bytes())
    assert (width, height) == (1400, 1000)
    colours = Counter(pixels)
    assert len(colours) > 20, "the screenshot is blank"
    assert colours[(255, 255, 255)] < len(pixels) * 0.98
    # The cells' backgrounds: passing (green) and failing (red) cells were drawn.
    assert colours[PASSED_RGB] > 500, colours.most_common(8)
    assert colours[FAILED_RGB] > 500, colours.most_common(8)

    dom = _browser(chromium, home, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr.decode("utf-8", "replace")[-2000:]
    parsed = Page(dom.stdout.decode("utf-8"))
    cells = parsed.cells()
    assert len(cells) == 2 * 3 * 2  # cases x profiles x versions
    assert {c["data-version"] for c in cells} == {"before", "after"}
    assert sum(tag == "details" for tag, _ in parsed.tags) == len(cells)
    assert "<b>not bold</b>" in "".join(parsed.text)
    policies = [
        a.get("content") or "" for t, a in parsed.tags if t == "meta" and a.get("http-equiv")
    ]
    assert any("default-src 'none'" in policy for policy in policies)  # no script may run
