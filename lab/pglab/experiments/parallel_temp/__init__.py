"""pglab parallel-temp: Parallel Temp Seq Scan against the alternatives, and the planner's choice.

Benchmark (same data, same session, same run): the stock serial scan of a temporary
table; our parallel scan with clean buffers; our parallel scan paying the flush, with
every resident page dirty and with a part of them dirty; and an UNLOGGED copy scanned
by stock Parallel Seq Scan (what users do instead).  Decision experiment: over a grid of
table size x dirty share x query, time both plans, see which one the planner picks with
the default costs, and report the regret (time lost against the better plan).
"""
