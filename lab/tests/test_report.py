"""`pglab report`: the section.json contract, and the HTML page rendered in headless Chromium."""

import base64
import html
import io
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from PIL import Image

from pglab import report_section as rs
from pglab.cli import main
from pglab.machine import machine_info

CHECK_SCRIPT = """
<script>
window.addEventListener('load', () => {
  const loaded = img => img.complete && img.naturalWidth > 0 && img.naturalHeight > 0;
  const sections = [...document.querySelectorAll('section.experiment')].map(s => ({
    key: s.dataset.experiment,
    images: s.querySelectorAll('img').length,
    loaded: [...s.querySelectorAll('img')].filter(loaded).length,
    runs: [...s.querySelectorAll('.run')].map(r => r.dataset.pgMajor),
    notRun: s.querySelector('.not-run') ? s.querySelector('.not-run').textContent : null,
    tables: s.querySelectorAll('table').length,
  }));
  const pre = document.createElement('pre');
  pre.id = 'pglab-check';
  pre.textContent = JSON.stringify({sections: sections, images: document.images.length});
  document.body.appendChild(pre);
});
</script>
"""


def _png(path: Path, color: str, size: tuple[int, int] = (320, 200)) -> None:
    Image.new("RGB", size, color).save(path, format="PNG")


def _section(directory: Path, experiment: str, major: int, generated: str, plots: list[str], color: str) -> None:
    directory.mkdir(parents=True)
    for name in plots:
        _png(directory / name, color)
    (directory / "raw.csv").write_text("a,b\n1,2\n")
    rs.write_section(directory, rs.Section(
        experiment=experiment, title=f"{experiment} title",
        article=rs.Table(["case", "ms"], [["article case", 50.925]], "the article"),
        ours=rs.Table(["case", "ms"], [[f"ours on {major}", 1.5], ["missing", None]], "ours"),
        tables=[rs.Table(["x"], [[1]], "extra")],
        machine=machine_info(), versions=rs.postgres_versions(f"{major}.1", major * 10000 + 1),
        command=f"pglab {experiment} --quick", plots=plots, raw_data=["raw.csv"],
        notes=[f"note <{experiment}> & co"], generated=generated,
    ))


@pytest.fixture
def results_root(tmp_path: Path) -> Path:
    """flush-cost on 18; temp-extend on 15 and 18; sequence-cache twice on 18; the others missing."""
    root = tmp_path / "results"
    _section(root / "flush-cost", "flush-cost", 18, "2026-01-01T10:00:00+00:00", ["phases.png"], "red")
    _section(root / "temp-extend-pg15", "temp-extend", 15, "2026-01-01T11:00:00+00:00", ["a.png", "b.png"], "blue")
    _section(root / "demo" / "temp-extend", "temp-extend", 18, "2026-01-01T12:00:00+00:00", ["a.png", "b.png"],
             "green")
    _section(root / "old" / "sequence-cache", "sequence-cache", 18, "2026-01-01T09:00:00+00:00", ["old.png"],
             "black")
    _section(root / "sequence-cache-pg18", "sequence-cache", 18, "2026-01-02T09:00:00+00:00", ["tps.png"],
             "orange")
    broken = root / "broken"
    broken.mkdir()
    (broken / "section.json").write_text(json.dumps({"schema": "something-else"}))
    return root


def test_find_sections_picks_the_latest_per_major(results_root: Path) -> None:
    found = rs.find_sections(results_root)
    assert set(found.sections) == {"flush-cost", "temp-extend", "sequence-cache"}
    runs = rs.latest_per_major(found.sections["temp-extend"])
    assert [r.postgresql_major for r in runs] == [15, 18]
    newest = rs.latest_per_major(found.sections["sequence-cache"])
    assert len(newest) == 1 and newest[0].plots == ["tps.png"]
    assert [p.parent.name for p, _ in found.invalid] == ["broken"]


def test_contract_is_checked(tmp_path: Path) -> None:
    section = rs.Section(
        experiment="x", title="x", article=rs.Table(["a"], [[1]]), ours=rs.Table(["a"], [[2]]), machine={},
        versions={}, command="pglab x", plots=["missing.png"],
    )
    with pytest.raises(rs.SectionError, match="missing files"):
        rs.write_section(tmp_path, section)
    (tmp_path / "missing.png").write_text("not a png")
    rs.write_section(tmp_path, section)
    with pytest.raises(rs.SectionError, match="not a PNG"):
        rs.load_section(tmp_path / rs.FILENAME)
    with pytest.raises(rs.SectionError, match="cells"):
        rs.Table.from_json({"columns": ["a", "b"], "rows": [[1]]}, "t")


def test_cli_writes_the_page(results_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    assert main(["report", "--results", str(results_root), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "parallel-temp: not run yet: pglab parallel-temp --quick" in printed
    assert "ignored" in printed and f"report written to {out}" in printed
    page = out.read_text()
    for experiment in rs.EXPERIMENTS:
        assert f'data-experiment="{experiment.key}"' in page
    assert page.count('class="not-run"') == len(rs.EXPERIMENTS) - 3  # all but the fixture's three
    assert "note &lt;temp-extend&gt; &amp; co" in page  # escaped
    uris = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(uris) == 1 + 2 + 2 + 1
    for uri in uris:
        assert Image.open(io.BytesIO(base64.b64decode(uri))).format == "PNG"
    assert "<script" not in page and "http://" not in page and "https://" not in page  # self-contained


def test_bad_results_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--results", str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a directory" in err[0]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _run_chromium(browser: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="pglab-chromium-") as profile:
        return subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={profile}", "--allow-file-access-from-files", "--hide-scrollbars", *args],
            capture_output=True, text=True, timeout=180,
        )


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_page_in_headless_chromium(results_root: Path, tmp_path: Path) -> None:
    browser = _chromium()
    assert browser is not None
    out = tmp_path / "report.html"
    assert main(["report", "--results", str(results_root), "--out", str(out)]) == 0

    # The DOM after load, with every image decoded: a copy of the page with a checking script.
    checked = tmp_path / "checked.html"
    checked.write_text(out.read_text().replace("</body>", CHECK_SCRIPT + "</body>"))
    result = _run_chromium(browser, "--virtual-time-budget=10000", "--dump-dom", checked.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    match = re.search(r'<pre id="pglab-check">(.*?)</pre>', result.stdout, re.DOTALL)
    assert match, result.stdout[-2000:]
    report = json.loads(html.unescape(match.group(1)))
    sections = {s["key"]: s for s in report["sections"]}
    assert list(sections) == [e.key for e in rs.EXPERIMENTS]
    expected_images = {"flush-cost": 1, "parallel-temp": 0, "buffered-plan": 0, "temp-extend": 4,
                       "sequence-cache": 1, "temp-shapes": 0}
    for key, count in expected_images.items():
        assert sections[key]["images"] == count and sections[key]["loaded"] == count, sections[key]
        if count:
            assert sections[key]["notRun"] is None and sections[key]["tables"] >= 3
        else:
            assert sections[key]["notRun"] == f"not run yet: pglab {key} --quick"
    assert sections["temp-extend"]["runs"] == ["15", "18"]  # side by side, 15 first

    # What a reader sees: a screenshot that is not blank and shows the plots' colours.
    shot = tmp_path / "shot.png"
    result = _run_chromium(browser, "--window-size=1400,6000", f"--screenshot={shot}", out.as_uri())
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    with Image.open(shot) as image:
        colours = {c for _, c in image.convert("RGB").getcolors(maxcolors=1 << 20) or []}
    assert (255, 0, 0) in colours and (0, 128, 0) in colours and (0, 0, 255) in colours  # red, green, blue plots
