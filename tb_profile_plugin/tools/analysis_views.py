"""What the overview page and the input pipeline analyzer share: per-host analysis and envelope."""

from __future__ import annotations

from tb_profile_plugin.analysis.advice import step_diagnostics
from tb_profile_plugin.analysis.host_analysis import HostAnalysis, analyze
from tb_profile_plugin.tools.document import Diagnostics
from tb_profile_plugin.tools.registry import RunFacts, ViewRequest


def single_host(request: ViewRequest, diagnostics: Diagnostics) -> tuple[str, HostAnalysis]:
    """The analysis of the one requested host, with its XSpace and step diagnostics added."""
    host, profile = next(iter(request.profiles.items()))
    for error in dict.fromkeys(profile.errors):
        diagnostics.errors.append(f"the profiler recorded an error: {error}")
    for warning in dict.fromkeys(profile.warnings):
        diagnostics.warnings.append(f"the profiler recorded a warning: {warning}")
    analysis = analyze(profile)
    warnings, info = step_diagnostics("", analysis)
    diagnostics.warnings.extend(warnings)
    diagnostics.info.extend(info)
    return host, analysis


def has_host_events(facts: RunFacts) -> bool:
    """Analyses need a host plane with events."""
    return facts.num_events > 0 and "/host:CPU" in facts.plane_names
