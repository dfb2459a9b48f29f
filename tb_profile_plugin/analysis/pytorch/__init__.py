"""PyTorch: the views' figures in PyTorch's terms, for profiles PyTorch wrote (Kineto).

- `coverage`: the time a set of intervals covers inside each of a list of windows (numpy).
- `step_roles`: torch-tb-profiler's step-time breakdown (kernel, memcpy, memset,
  communication, runtime, DataLoader, CPU exec, other) per step, by priority.
- `gpu_metrics`: GPU utilization, estimated SM efficiency and achieved occupancy per GPU.
- `op_shapes`: operators (host self and total time, device time of what they launched) and
  operators by input shape.
- `facts`: all of it for one host, once, with its analysis (and several hosts combined).

Reads events/, steps/ and ops/; the names PyTorch writes come from xspace/producers/.
"""
