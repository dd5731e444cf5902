# Shared pytest fixtures (pg_cluster, pg_conn, pg_cluster_factory) for pg_tempbuf/tests and lab/tests.
pytest_plugins = ["pglab.testing"]
