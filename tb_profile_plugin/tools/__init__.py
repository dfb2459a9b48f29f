"""One pure function per view: decoded profiles in, a JSON-able document out.

The registry is imported first, whatever module of the package a process asks for (a worker
unpickling a view's per-host task imports that view's module first): it imports every view in
its order, so the views' imports of one another never meet a half-initialised module.
"""

from tb_profile_plugin.tools import registry  # noqa: F401  (first: see above)
