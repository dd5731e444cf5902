"""`pglab report`: one self-contained HTML page with the latest result of every experiment.

It reads the section.json files below a results root (see pglab.report_section for the
contract), and writes a single HTML file: no scripts, no external files, plots embedded as
base64 PNG data URIs, so it opens anywhere and can be mailed or archived as is.
"""

from __future__ import annotations

import argparse
import base64
import html
from pathlib import Path
from typing import Any

from rich.console import Console

from pglab import report_section as rs
from pglab.errors import LabError
from pglab.progress import result_console

NAME = "report"
DEFAULT_RESULTS = Path("results")

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 2400px; }
h1 { margin-bottom: 0.2em; }
nav ul { columns: 2; }
section.experiment { border-top: 3px solid #446; margin-top: 2em; padding-top: 0.5em; }
.runs { display: grid; grid-template-columns: repeat(auto-fit, minmax(620px, 1fr)); gap: 1.5em; }
.run { border: 1px solid #ccd; border-radius: 6px; padding: 0.8em; background: #fafaff; min-width: 0; }
.tablewrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #bbc; padding: 2px 6px; vertical-align: top; }
th { background: #e8e8f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; font-size: 0.9em; color: #444; padding-bottom: 0.3em; }
figure { margin: 0.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.8em; color: #666; }
pre { background: #f2f2f2; padding: 0.5em; overflow-x: auto; white-space: pre-wrap; }
.not-run { font-size: 1.1em; color: #a40; }
.meta { font-size: 0.85em; color: #444; }
.invalid { color: #a00; }
"""


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        NAME,
        help="one self-contained HTML page with the latest result of every experiment",
        description=(
            "Finds every section.json under --results (each experiment writes one into its output "
            "directory), and writes one HTML page: per experiment the article's figures beside ours, "
            "the plots (embedded), the machine, the versions and the command that reruns it; the latest "
            "run of each PostgreSQL major version side by side; experiments without a result say "
            "'not run yet' with the command to run."
        ),
    )
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, metavar="DIR",
                        help="results root to search (default %(default)s)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="the HTML file to write (default <results>/report.html)")


def command(args: argparse.Namespace) -> int:
    results: Path = args.results
    if not results.is_dir():
        raise LabError(f"--results {results} is not a directory (run an experiment first, "
                       "e.g. pglab temp-extend --quick)")
    out: Path = args.out or results / "report.html"
    if not out.parent.is_dir():
        raise LabError(f"--out {out}: parent directory {out.parent} does not exist")
    if out.is_dir():
        raise LabError(f"--out {out} is a directory; give a file name")
    found = rs.find_sections(results)
    page = render(found, results)
    out.write_text(page, encoding="utf-8")
    _print_summary(found, out, result_console())
    return 0


def _print_summary(found: rs.Found, out: Path, console: Console) -> None:
    for experiment in experiment_order(found):
        runs = rs.latest_per_major(found.sections.get(experiment.key, []))
        if runs:
            versions = ", ".join(f"PostgreSQL {r.versions.get('postgresql', '?')} ({r.generated})" for r in runs)
            console.print(f"{experiment.key}: {versions}", markup=False, highlight=False)
        else:
            console.print(f"{experiment.key}: not run yet: {experiment.command}", markup=False, highlight=False)
    for path, why in found.invalid:
        console.print(f"ignored {path}: {why}", markup=False, highlight=False)
    console.print(f"report written to {out}", markup=False, highlight=False)


def experiment_order(found: rs.Found) -> list[rs.Experiment]:
    """The registered experiments, then any other that has results."""
    known = {e.key for e in rs.EXPERIMENTS}
    extra = [rs.Experiment(key, sections[0].title, sections[0].command)
             for key, sections in sorted(found.sections.items()) if key not in known]
    return [*rs.EXPERIMENTS, *extra]


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render_table(table: rs.Table) -> str:
    parts = ['<div class="tablewrap"><table>']
    if table.caption:
        parts.append(f"<caption>{_e(table.caption)}</caption>")
    parts.append("<tr>" + "".join(f"<th>{_e(c)}</th>" for c in table.columns) + "</tr>")
    for row in table.rows:
        cells = []
        for cell in row:
            css = ' class="num"' if isinstance(cell, (int, float)) and not isinstance(cell, bool) else ""
            cells.append(f"<td{css}>{_e(rs.format_cell(cell))}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table></div>")
    return "\n".join(parts)


def png_data_uri(path: Path) -> str:
    data = path.read_bytes()
    if not data.startswith(rs.PNG_MAGIC):
        raise rs.SectionError(f"{path} is not a PNG file")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _machine_line(machine: dict[str, Any]) -> str:
    memory = machine.get("memory_total_bytes")
    memory_text = f"{memory / 2**30:.1f} GiB" if isinstance(memory, (int, float)) else "? GiB"
    return (f"{machine.get('cpu_model', '?')}, {machine.get('cpu_cores_logical', '?')} logical cores, "
            f"{memory_text} memory, {machine.get('os', '?')}, host {machine.get('hostname', '?')}"
            + (f", shared memory huge pages: {machine['shmem_huge_pages']}"
               if machine.get("shmem_huge_pages") else ""))


def _versions_line(versions: dict[str, Any]) -> str:
    shown = {k: v for k, v in versions.items() if k not in ("postgresql_num", "postgresql_major")}
    return "; ".join(f"{k} {v}" for k, v in shown.items())


def render_run(section: rs.Section) -> str:
    assert section.directory is not None
    major = section.postgresql_major
    parts = [f'<div class="run" data-pg-major="{_e(major if major is not None else "unknown")}">',
             f"<h3>PostgreSQL {_e(section.versions.get('postgresql', '?'))}</h3>",
             f'<p class="meta">run {_e(section.generated)}, status {_e(section.status)}, '
             f"from {_e(section.directory)}</p>",
             render_table(section.ours)]
    parts += [render_table(t) for t in section.tables]
    for name in section.plots:
        parts.append(f'<figure><img src="{png_data_uri(section.directory / name)}" alt="{_e(name)}">'
                     f"<figcaption>{_e(name)}</figcaption></figure>")
    if section.notes:
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in section.notes) + "</ul>")
    parts.append(f'<p class="meta">machine: {_e(_machine_line(section.machine))}<br>'
                 f"versions: {_e(_versions_line(section.versions))}<br>"
                 f"raw data: {_e(', '.join(section.raw_data) or '(none listed)')} in {_e(section.directory)}</p>")
    parts.append(f"<p>rerun:</p><pre><code>{_e(section.command)}</code></pre>")
    parts.append("</div>")
    return "\n".join(parts)


def render_experiment(experiment: rs.Experiment, sections: list[rs.Section]) -> str:
    runs = rs.latest_per_major(sections)
    parts = [f'<section class="experiment" id="{_e(experiment.key)}" data-experiment="{_e(experiment.key)}">',
             f"<h2>{_e(runs[0].title if runs else experiment.title)}</h2>"]
    if not runs:
        parts.append(f'<p class="not-run">not run yet: <code>{_e(experiment.command)}</code></p>')
    else:
        parts.append("<h3>The article</h3>")
        parts.append(render_table(runs[0].article))
        parts.append("<h3>Ours</h3>" if len(runs) == 1 else
                     f"<h3>Ours: {len(runs)} PostgreSQL versions side by side</h3>")
        parts.append('<div class="runs">')
        parts += [render_run(run) for run in runs]
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


def render(found: rs.Found, results_root: Path) -> str:
    order = experiment_order(found)
    nav = []
    for experiment in order:
        runs = rs.latest_per_major(found.sections.get(experiment.key, []))
        status = ", ".join(f"PostgreSQL {r.versions.get('postgresql', '?')}" for r in runs) or "not run yet"
        nav.append(f'<li><a href="#{_e(experiment.key)}">{_e(experiment.title)}</a>: {_e(status)}</li>')
    body = [
        "<h1>pg_tempbuf lab: experiments beside the articles</h1>",
        f'<p class="meta">generated {_e(rs.utc_timestamp())} from {_e(results_root.resolve())}; '
        "each experiment shows the article's published figures, then the latest run of each PostgreSQL "
        "major version found.</p>",
        "<nav><ul>" + "".join(nav) + "</ul></nav>",
        *[render_experiment(e, found.sections.get(e.key, [])) for e in order],
    ]
    if found.invalid:
        body.append('<section class="invalid"><h2>Ignored result folders</h2><ul>'
                    + "".join(f"<li>{_e(p)}: {_e(why)}</li>" for p, why in found.invalid) + "</ul></section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>pg_tempbuf lab report</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
