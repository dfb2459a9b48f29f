"""One pure function per view: decoded profiles in, a JSON-able document out.

`view.py` holds what a view is (`View`, `ViewRequest`, `RunFacts`); each `<view>.py` defines
its `VIEW`; `registry.py` lists them all (the only module that imports every view). Views never
import the registry, so a process may import any one view (a worker unpickling its per-host
task) without the others.
"""
