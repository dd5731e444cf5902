"""pglab.equal_memory: the shared_buffers an UNLOGGED copy gets beside a temporary table's pool."""

from __future__ import annotations

import argparse

import pytest

from pglab import equal_memory as em
from pglab.cliargs import memory_size_bytes


def test_sizes() -> None:
    assert memory_size_bytes("8MB") == 8 << 20
    assert memory_size_bytes("2GB") == 2 << 30
    assert memory_size_bytes("1024") == 1024 * 8192  # unitless: 8 kB buffers, as PostgreSQL reads temp_buffers
    with pytest.raises(ValueError, match="not a size"):
        memory_size_bytes("lots")


def test_shared_buffers_holds_the_largest_pool_never_below_the_server_default() -> None:
    assert em.shared_buffers_setting(None, ("64MB", "2GB")) == "2GB"
    assert em.shared_buffers_setting(None, ("8MB",)) == "128MB"
    assert em.shared_buffers_setting(None, ()) == "128MB"
    assert em.shared_buffers_setting("1GB", ("2GB",)) == "1GB"  # the user's choice wins
    assert em.shared_buffers_setting("server", ("2GB",)) is None


def test_server_settings_only_for_a_throwaway_server() -> None:
    base = {"max_worker_processes": "8"}
    assert em.server_settings(base, None, ("512MB",), None) == {**base, "shared_buffers": "512MB"}
    assert em.server_settings(base, None, ("512MB",), "host=/x") == base
    assert em.server_settings(base, "server", ("512MB",), None) == base
    assert base == {"max_worker_processes": "8"}  # not changed in place


def test_argument() -> None:
    assert em.shared_buffers_argument("server") == "server"
    assert em.shared_buffers_argument("4GB") == "4GB"
    with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
        em.shared_buffers_argument("4 GB")
