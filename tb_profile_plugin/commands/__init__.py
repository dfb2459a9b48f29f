"""`tb-profile` subcommands that live in their own modules (see cli.COMMAND_MODULES).

Each command module defines `HELP`, `add_arguments(parser)` and `run(args) -> int`. Shared
pieces: `profiles` (PATH -> run and host files, opened with progress), `progress` (the stderr
bar), `output` (JSON exactly as the routes serve it, CSV, colour on terminals).
"""
