"""Memory: allocator snapshots, the peak and its make-up, and the timeline to draw.

- `snapshots`: one snapshot per allocator event, as columns, per allocator.
- `peak`: the snapshot with the most memory in use and what made it up.
- `timeline`: which snapshots to draw (all of a range, or a min/max reduction).

Reads events/.
"""
