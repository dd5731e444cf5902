"""`make dist`: each extension's PGXN archive builds with plain PGXS from a clean directory."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTENSIONS = ("pg_tempbuf", "pg_buffered_plan")


def control_version(ext: str) -> str | None:
    control = REPO / ext / f"{ext}.control"
    if not control.exists():
        return None
    match = re.search(r"default_version\s*=\s*'([^']+)'", control.read_text())
    assert match, control
    return match.group(1)


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_meta_json_matches_the_extension(ext: str) -> None:
    meta = json.loads((REPO / ext / "META.json").read_text())
    assert meta["name"] == ext
    assert meta["license"] == "postgresql"
    assert meta["meta-spec"]["version"] == "1.0.0"
    provided = meta["provides"][ext]
    assert (REPO / ext / provided["file"]).exists()
    sql_version = control_version(ext)
    if sql_version is not None:  # "1.0" in the control file is release "1.0.0"
        assert provided["version"].startswith(sql_version)
    assert (REPO / "LICENSE").read_text().startswith("PostgreSQL License")


def test_dist_archives_build_from_a_clean_directory(tmp_path: Path, pg_config_path: str) -> None:
    out = tmp_path / "dist"
    made = subprocess.run(["make", "-s", "dist", f"DIST_DIR={out}"], cwd=REPO, check=True,
                          capture_output=True, text=True)
    archives = sorted(out.glob("*.tar.gz"))
    assert [a.name.split("-")[0] for a in archives] == sorted(EXTENSIONS), made.stdout
    for archive in archives:
        with tarfile.open(archive) as tar:
            names = tar.getnames()
            top = names[0].split("/")[0]
            assert all(n.split("/")[0] == top for n in names), "one top-level folder"
            assert f"{top}/mk/pgxs.mk" in names and f"{top}/LICENSE" in names
            assert f"{top}/META.json" in names
            tar.extractall(tmp_path / "build", filter="data")
        folder = tmp_path / "build" / top
        ext = top.rsplit("-", 1)[0]
        subprocess.run(["make", "-s", f"PG_CONFIG={pg_config_path}"], cwd=folder, check=True,
                       capture_output=True, text=True)
        assert (folder / f"{ext}.so").exists()
