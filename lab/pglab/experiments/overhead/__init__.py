"""`pglab overhead`: what loading pg_tempbuf costs a workload that never touches a temporary table."""
