"""On-disk cache of decoded profiles, so a second open of the same file costs milliseconds.

The package's modules, each importing only modules listed before it:

- `files`: reading the cache's files safely (no blocking open, no final symlink, only this
  user's regular files), into memory of this process, never a mapping; removing them.
- `directory`: where the cache is (`cache_dir`, `CACHE_DIR_ENV`), the checks that it is safe to
  use, its secret, stale temporary files, and the entries' keys (`cache_key`).
- `tree`: a profile as an entry's JSON tree and arrays, and back, with the checks that the
  loaded columns fit together.
- `entry`: the entry file format, its MAC and word sums, and reading an entry back, whole or
  array by array (`EntryArrays`, `DamagedEntry`).
- `writer`: writing entries, now (`save_entry`) or on the writer thread (`save_entry_later`,
  `flush`, `quiet`, `lower_priority`).
- `lookup`: entries by key (`load`, `load_entry`, `entry_exists`, `load_entry_lazily`,
  `LAZY_MIN_BYTES`) and the profile's own entry (`save`, `save_later`).
- `lazy`: a profile whose lines' columns are read on first use (`load_lazily`); not imported
  here.

This module re-exports the names callers use (`from tb_profile_plugin.xspace import cache`, then
`cache.load`). `LAZY_MIN_BYTES` is not among them: it is read where it is set
(`lookup.LAZY_MIN_BYTES`), so that a change to it there reaches every reader.
"""

from __future__ import annotations

from tb_profile_plugin.xspace.cache.directory import (
    CACHE_DIR_ENV,
    STALE_TMP_S,
    cache_dir,
    cache_key,
)
from tb_profile_plugin.xspace.cache.entry import DamagedEntry, EntryArrays
from tb_profile_plugin.xspace.cache.files import open_regular
from tb_profile_plugin.xspace.cache.lookup import (
    entry_exists,
    load,
    load_entry,
    load_entry_lazily,
    save,
    save_later,
)
from tb_profile_plugin.xspace.cache.tree import Special, profile_from
from tb_profile_plugin.xspace.cache.writer import (
    flush,
    lower_priority,
    quiet,
    save_entry,
    save_entry_later,
)

__all__ = [
    "CACHE_DIR_ENV", "STALE_TMP_S", "DamagedEntry", "EntryArrays", "Special", "cache_dir",
    "cache_key", "entry_exists", "flush", "load", "load_entry", "load_entry_lazily",
    "lower_priority", "open_regular", "profile_from", "quiet", "save", "save_entry",
    "save_entry_later", "save_later",
]
