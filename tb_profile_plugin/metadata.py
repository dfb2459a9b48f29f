"""Constants shared by the loader, the plugin and the command line."""

from __future__ import annotations

PLUGIN_NAME = "profile"
#: The entry point value TensorBoard loads for this project (pyproject.toml).
ENTRY_POINT = "tb_profile_plugin.loader:ProfilePluginLoader"
#: Flag and environment variable choosing which installed `profile` plugin serves the tab.
CHOICE_FLAG = "profile_plugin"
CHOICE_ENV = "TB_PROFILE_PLUGIN"
CHOICE_OURS = "tb-profile"
CHOICE_OTHER = "other"
#: TensorBoard flag switching the capture_profile route off (`--profile_capture=off`).
CAPTURE_FLAG = "profile_capture"
#: TensorBoard flag naming a Dask scheduler for per-host work (analysis/hosts/executors.py).
SCHEDULER_FLAG = "profile_scheduler"
