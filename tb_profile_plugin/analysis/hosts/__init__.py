"""Hosts: one host's whole analysis, and a run of several hosts.

- `host_analysis`: everything the analysis views need from one host, computed once.
- `host_facts`: what a host's file holds, cheaply (planes, names, counts), for routing.
- `device_names`: a device's name as the run environment shows it.
- `executors`: where per-host work runs (a local process pool or a Dask cluster).
- `host_pool`: per-host results of a run's files, cached per file, on the executor.
- `host_progress`: hosts done / total of the work in flight, for progress bars.
- `step_alignment`: which steps of several hosts are the same training step.
- `multi_host`: ALL_HOSTS, every host's analysis combined as one host's would be.
- `stragglers`: per common step, the slowest host and which category explains it.

Reads events/, steps/, ops/ and tf_data/.
"""
