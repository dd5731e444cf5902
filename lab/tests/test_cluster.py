"""The throwaway-cluster helper and `pglab cluster-exec`."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pglab.cluster import Cluster, format_setting, parse_setting_assignment
from pglab.errors import LabError
from pglab.pgconfig import PgInstall, parse_version_num
from pglab.testing import ClusterFactory


def test_session_cluster(pg_cluster: Cluster) -> None:
    with pg_cluster.connect() as conn:
        assert conn.autocommit
        row = conn.execute(
            "SELECT current_setting('server_version_num')::int, current_user, current_database(),"
            " current_setting('listen_addresses')"
        ).fetchone()
    assert row == (pg_cluster.version_num, "postgres", "postgres", "")
    assert pg_cluster.bindir.is_dir() and pg_cluster.pkglibdir.is_dir()
    assert pg_cluster.psql(sql="SELECT 6 * 7").strip() == "42"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another OS user")
def test_server_does_not_run_as_root(pg_cluster: Cluster) -> None:
    assert pg_cluster.data_dir.stat().st_uid != 0
    assert pg_cluster.os_user.name == "pglab"


def test_settings_and_checksums(pg_cluster_factory: ClusterFactory) -> None:
    cluster = pg_cluster_factory(settings={"temp_buffers": "3MB", "application_name": "it's"}, checksums=True)
    with cluster.connect() as conn:
        settings = conn.execute(
            "SELECT current_setting('temp_buffers'), current_setting('application_name'),"
            " current_setting('data_checksums')"
        ).fetchone()
    assert settings == ("3MB", "it's", "on")
    cluster_off = pg_cluster_factory(checksums=False)
    with cluster_off.connect() as conn:
        assert conn.execute("SHOW data_checksums").fetchone() == ("off",)


def test_start_failure_shows_the_server_log(pg_cluster_factory: ClusterFactory) -> None:
    with pytest.raises(LabError) as failure:
        pg_cluster_factory(settings={"shared_buffers": "lots"})
    message = str(failure.value)
    assert "failed to start" in message and "shared_buffers" in message


def test_cleanup_removes_everything(pg_config_path: str) -> None:
    cluster = Cluster(pg_config_path).start()
    base, socket_dir = cluster.base_dir, cluster.socket_dir
    cluster.cleanup()
    assert not base.exists() and not socket_dir.exists()
    cluster.cleanup()  # idempotent


def test_conf_values() -> None:
    assert format_setting(True) == "on"
    assert format_setting(100) == "100"
    assert format_setting("a'b") == "'a''b'"
    assert parse_setting_assignment(" work_mem = 4MB ") == ("work_mem", "4MB")
    with pytest.raises(LabError):
        parse_setting_assignment("work_mem")


def test_version_numbers() -> None:
    assert parse_version_num("PostgreSQL 15.20 (Debian 15.20-0+deb12u1)") == 150020
    assert parse_version_num("PostgreSQL 18.6") == 180006
    assert parse_version_num("PostgreSQL 19devel") == 190000


def test_missing_pg_config() -> None:
    with pytest.raises(LabError, match="pg_config not found"):
        PgInstall.from_pg_config("/nonexistent/pg_config")


def _cluster_exec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pglab", "cluster-exec", *args], capture_output=True, text=True, timeout=120
    )


def test_cluster_exec_passes_environment_and_exit_code(pg_config_path: str) -> None:
    psql = PgInstall.from_pg_config(pg_config_path).program("psql")
    script = (
        'test "$PGUSER" = postgres && test "$PGDATABASE" = postgres && test -S "$PGHOST/.s.PGSQL.$PGPORT" '
        f'&& "{psql}" -XAtc "SHOW work_mem" && exit 7'
    )
    result = _cluster_exec("--pg-config", pg_config_path, "--set", "work_mem=7MB", "--", "sh", "-c", script)
    assert result.returncode == 7, result.stderr
    assert result.stdout.strip() == "7MB"


def test_cluster_exec_command_not_found(pg_config_path: str) -> None:
    result = _cluster_exec("--pg-config", pg_config_path, "--", "/nonexistent/command")
    assert result.returncode == 127
    assert "command not found" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another OS user")
def test_grant_search_adds_only_search_permission(tmp_path: Path) -> None:
    """A clone in a 0700 folder (mktemp -d) must still let the server user reach the wheel."""
    from pglab.osuser import server_os_user

    outer = tmp_path / "private"
    inner = outer / "install" / "bin"
    inner.mkdir(parents=True)
    outer.chmod(0o700)
    (outer / "install").chmod(0o750)
    server_os_user().grant_search(inner)
    assert stat.S_IMODE(outer.stat().st_mode) == 0o701
    assert stat.S_IMODE((outer / "install").stat().st_mode) == 0o751
    assert stat.S_IMODE(inner.stat().st_mode) & stat.S_IXOTH


def test_connections_never_prepare_implicitly(pg_cluster: Cluster) -> None:
    # A statement run many times must be planned each time, so that a SET between two
    # runs of the same text (what the experiments compare) changes the plan.
    with pg_cluster.connect() as conn:
        for enable in ("on", "off", "on", "off", "on", "off", "on", "off"):
            conn.execute(f"SET enable_seqscan = {enable}")
            conn.execute("SELECT count(*) FROM pg_class").fetchall()
        row = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
    assert row == (0,)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads the postmaster's /proc/PID/environ")
def test_server_env_reaches_the_postmaster(pg_config_path: str) -> None:
    with Cluster(pg_config_path, server_env={"PGLAB_PROBE": "it's here"}) as cluster:
        pid = (cluster.data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert b"PGLAB_PROBE=it's here" in environ
