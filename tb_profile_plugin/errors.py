"""The project's exceptions; plugin.py maps each to one HTTP status, the CLI to an exit code.

Messages are for users: they say what happened and what to do about it.
"""

from __future__ import annotations


class ProfileError(Exception):
    """Base of every error the plugin reports to a user."""

    http_status = 500
    exit_code = 1


class NotFound(ProfileError):
    """An unknown run, view, host or table (HTTP 404)."""

    http_status = 404
    exit_code = 3


class BadRequest(ProfileError):
    """A malformed parameter, or a path that would leave the logdir (HTTP 400)."""

    http_status = 400
    exit_code = 2


class UnreadableProfile(ProfileError):
    """A profile file that exists but is not a readable XSpace (HTTP 422)."""

    http_status = 422
    exit_code = 4


class EngineUnavailable(ProfileError):
    """The configured Dask scheduler cannot be reached, or has no workers (HTTP 503)."""

    http_status = 503
    exit_code = 6


class CaptureDisabled(ProfileError):
    """Capture was switched off when TensorBoard started (HTTP 403)."""

    http_status = 403
    exit_code = 2


class CaptureBusy(ProfileError):
    """Another capture is still running in this TensorBoard (HTTP 409)."""

    http_status = 409
    exit_code = 5


class CaptureFailed(ProfileError):
    """No profiler server returned a trace (HTTP 502; 504 when every failure was a deadline)."""

    http_status = 502
    exit_code = 5


class CaptureTimedOut(CaptureFailed):
    """Every profiler server failed by missing its deadline (HTTP 504)."""

    http_status = 504


class RequestTimedOut(ProfileError):
    """The request computed longer than TB_PROFILE_REQUEST_SECONDS (HTTP 503;
    request_budget.py)."""

    http_status = 503
    exit_code = 1  # the CLI sets no budget: never raised there


class ClientGone(ProfileError):
    """The client closed its connection; nobody will read the answer (HTTP 499, never sent)."""

    http_status = 499
    exit_code = 1  # the CLI sets no budget: never raised there
