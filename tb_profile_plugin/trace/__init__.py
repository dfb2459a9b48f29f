"""The trace viewer's server side: event index, window queries, details, search, export."""
