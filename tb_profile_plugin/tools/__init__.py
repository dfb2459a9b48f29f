"""One pure function per view: decoded profiles in, a JSON-able document out."""
