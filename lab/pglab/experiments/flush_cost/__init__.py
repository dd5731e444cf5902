"""The article's flush-cost benchmark: how much a flush of N dirty temp buffers costs,
relative to reading N blocks, on this machine.

Modules: options (grid, phase names), steps (the ten steps in one session, with checks),
runner (server, sessions, raw.csv), records (raw.csv rows), model (fits and cost
parameters), report (summary.md, model.json, meta.json, console), plots (PNG).
Kept import-light: the CLI parses options without loading numpy/matplotlib.
"""
