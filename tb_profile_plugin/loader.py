"""TensorBoard loader: adds the flags, picks which `profile` plugin serves, builds the plugin.

Two plugins named `profile` (this one and, say, `tensorboard-plugin-profile` / `xprof`) would
stop TensorBoard at start-up ("Duplicate plugins for name profile"). When another one is
installed, this loader makes exactly one of them load: tb-profile by default, the other one with
`--profile_plugin=other` (or `TB_PROFILE_PLUGIN=other`). It logs which one serves the tab.
Imports of the plugin itself are lazy, so TensorBoard starts fast.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
from typing import Any

from tensorboard.plugins import base_plugin

from tb_profile_plugin import metadata

logger = logging.getLogger(__name__)


def other_profile_plugins() -> list[importlib.metadata.EntryPoint]:
    """Installed `tensorboard_plugins` entry points named `profile` that are not this one."""
    points = importlib.metadata.entry_points(group="tensorboard_plugins")
    return [
        ep for ep in points
        if ep.name == metadata.PLUGIN_NAME and ep.value != metadata.ENTRY_POINT
    ]


def _choice(flags: Any) -> str:
    value = getattr(flags, metadata.CHOICE_FLAG, None) or os.environ.get(metadata.CHOICE_ENV)
    return value or metadata.CHOICE_OURS


def _silence_other(entry_point: importlib.metadata.EntryPoint) -> None:
    """Make the other plugin's loader return None unless the user chose it."""
    try:
        other_loader = entry_point.load()
    except Exception as exc:  # a broken install of the other plugin: it will not load anyway
        logger.warning("could not inspect the other profile plugin %s: %s", entry_point.value, exc)
        return
    original_load = getattr(other_loader, "load", None)
    if original_load is None or getattr(original_load, "_tb_profile_wrapped", False):
        return

    def load(self: Any, context: base_plugin.TBContext) -> Any:
        if _choice(context.flags) == metadata.CHOICE_OTHER:
            return original_load(self, context)
        return None

    load._tb_profile_wrapped = True  # type: ignore[attr-defined]
    other_loader.load = load


class ProfilePluginLoader(base_plugin.TBLoader):
    """Loads tb-profile as TensorBoard's Profile tab."""

    def define_flags(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("tb-profile")
        try:
            group.add_argument(
                f"--{metadata.CHOICE_FLAG}",
                choices=(metadata.CHOICE_OURS, metadata.CHOICE_OTHER),
                default=None,
                help="When another plugin named 'profile' is installed (tensorboard-plugin-"
                "profile, xprof): which one serves the Profile tab. Default tb-profile; also "
                f"settable with ${metadata.CHOICE_ENV}.",
            )
            group.add_argument(
                f"--{metadata.CAPTURE_FLAG}",
                choices=("on", "off"),
                default="on",
                help="Whether the Profile tab may capture profiles (Capture Profile: TensorBoard "
                "connects to the host:port a user types and writes the trace into the logdir). "
                "Default on. Turn it off when TensorBoard listens beyond localhost (--bind_all, "
                "--host 0.0.0.0): anyone who can reach TensorBoard could then make it connect "
                "to any address its machine can reach and fill the logdir.",
            )
            group.add_argument(
                f"--{metadata.SCHEDULER_FLAG}",
                default=None,
                metavar="tcp://HOST:8786",
                help="Analyse the hosts of a run (ALL_HOSTS views) on this Dask distributed "
                "scheduler's workers instead of a local process pool; the workers must read "
                "the logdir by the same path or URL and have tb-profile installed "
                "(pip install \"tb-profile[dask]\"). Also settable with $TB_PROFILE_SCHEDULER.",
            )
        except argparse.ArgumentError:
            pass  # defined already (two loaders of this package)
        for entry_point in other_profile_plugins():
            _silence_other(entry_point)

    def load(self, context: base_plugin.TBContext) -> base_plugin.TBPlugin | None:
        others = other_profile_plugins()
        if others and _choice(context.flags) == metadata.CHOICE_OTHER:
            logger.warning(
                "tb-profile: the Profile tab is served by %s (chosen with --%s=other); "
                "tb-profile is not loaded", others[0].value, metadata.CHOICE_FLAG,
            )
            return None
        if others:
            logger.warning(
                "tb-profile serves the Profile tab; the other installed profile plugin (%s) is "
                "not loaded. Choose it with --%s=other or %s=other, or uninstall one of them.",
                ", ".join(ep.value for ep in others), metadata.CHOICE_FLAG, metadata.CHOICE_ENV,
            )
        else:
            logger.info("tb-profile serves the Profile tab")
        from tb_profile_plugin.plugin import ProfilePlugin

        return ProfilePlugin(context)
