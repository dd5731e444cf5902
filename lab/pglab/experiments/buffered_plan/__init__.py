"""pglab buffered-plan: the BufferedPlan batching nodes (extension pg_buffered_plan) on TPC-H."""
