"""Events: every event of a profile as one table of columns, and what each event is.

- `table`: the flat event table of every line (starts, ends, names, canonical stat columns).
- `nesting`: depth and parent of each event on its line (numpy, or the compiled pass).
- `forest`: which step group every event belongs to (the profiler's grouping rules).
- `op_names`: an event name parsed into a framework op (`name:Type`, iterators, memcpys).
- `column_sizes`: the narrow integer types and parts that keep per-event memory small.
- `profile_cache`: `per_profile`, the memo that keeps results with their profile and counts
  their bytes; `profile_nested` / `profile_forest`, the tables every analysis starts from.

Reads `xspace` only; every other analysis package reads this one.
"""
