"""`tb-profile capture ADDRS --logdir L [--duration-ms D] [--python-tracer] ...`.

The Capture Profile dialog's job from a terminal: ADDRS is one or more comma-separated
`host:port` of programs that called `tf.profiler.experimental.server.start(port)` (`grpc://`
allowed). They are captured at the same time into one new run of L
(`L/[RUN/]plugins/profile/<session>/<host>_<port>.xplane.pb`). Prints what was captured, or
one sentence per failure (exit code 5; 2 for a bad address or option).
"""

from __future__ import annotations

import argparse
import json
import sys

from tb_profile_plugin.capture import (
    DEFAULT_MAX_XSPACE_BYTES,
    MAX_XSPACE_BYTES_ENV,
    CaptureOptions,
    capture,
    parse_addresses,
)

HELP = "capture running TensorFlow programs' profiler servers into a new run of a logdir"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = CaptureOptions()
    parser.add_argument("addresses", metavar="ADDRS",
                        help="host:port[,host:port...] of profiler servers (grpc:// allowed)")
    parser.add_argument("--logdir", required=True, help="TensorBoard logdir to write the run to")
    parser.add_argument("--run", default="",
                        help="a subdirectory of the logdir for the capture (TensorBoard run)")
    parser.add_argument("--duration-ms", type=int, default=defaults.duration_ms,
                        help=f"how long to trace (default {defaults.duration_ms})")
    parser.add_argument("--num-retry", type=int, default=defaults.num_retry,
                        help="captures to try again when every trace comes back empty "
                        f"(default {defaults.num_retry})")
    parser.add_argument("--host-tracer-level", type=int, choices=(0, 1, 2, 3),
                        default=defaults.host_tracer_level,
                        help="0 off, 1 critical, 2 info, 3 verbose (default "
                        f"{defaults.host_tracer_level})")
    parser.add_argument("--device-tracer-level", type=int, choices=(0, 1),
                        default=defaults.device_tracer_level, help="0 off, 1 on (default 1)")
    parser.add_argument("--python-tracer", action="store_true",
                        help="also trace every Python function call (python_tracer_level=1)")
    parser.add_argument("--delay-ms", type=int, default=defaults.delay_ms,
                        help="start tracing this long after the request (default 0)")
    parser.add_argument("--max-events", type=int, default=defaults.max_events,
                        help=f"events a server keeps at most (default {defaults.max_events})")
    parser.add_argument("--max-bytes", type=int, default=None,
                        help="the largest trace accepted from one server, in bytes (default "
                        f"${MAX_XSPACE_BYTES_ENV} or {DEFAULT_MAX_XSPACE_BYTES})")
    parser.add_argument("--json", action="store_true",
                        help="print the capture_profile route's JSON answer")


def run(args: argparse.Namespace) -> int:
    options = CaptureOptions(
        duration_ms=args.duration_ms,
        num_retry=args.num_retry,
        host_tracer_level=args.host_tracer_level,
        device_tracer_level=args.device_tracer_level,
        python_tracer_level=1 if args.python_tracer else 0,
        delay_ms=args.delay_ms,
        max_events=args.max_events,
        max_xspace_bytes=args.max_bytes,
    )
    parse_addresses(args.addresses)  # a malformed address fails before anything is printed
    if not args.json:
        print(f"tb-profile: tracing {args.addresses} for {options.duration_ms} ms…",
              file=sys.stderr, flush=True)
    result = capture(args.addresses, args.logdir, options, run=args.run)
    if args.json:
        json.dump(result.as_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(result.message)
        print(f"Open it with: tb-profile serve {args.logdir}")
    return 0
