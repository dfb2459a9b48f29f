"""Capture real NVIDIA GPU profiles with JAX (CUPTI tracer) for the test fixtures.

Runs where JAX sees an NVIDIA GPU (it needs ``jax[cuda]``; nothing from this project), and
writes each capture as ``jax.profiler.trace`` leaves it, then copies every ``.xplane.pb``
flat into ``--out`` as ``<fixture>.xplane.pb`` beside ``captures.json`` (versions, device,
what each capture ran). ``tests/data/README.md`` says how the committed ones were made.

    python scripts/capture_nvidia.py --out /tmp/nvidia_captures

Fixtures (all jitted, compiled and warmed up outside the capture):

``jax_nvidia_train``
    ``NVIDIA_STEPS`` training steps of a small transformer block in bfloat16 (attention
    through ``jax.nn.dot_product_attention``, layer norm, GELU MLP, SGD), each wrapped in
    ``jax.profiler.StepTraceAnnotation("train", step_num=i)``. Every step copies a fresh
    batch to the GPU (``jax.device_put``: host-to-device memcpys) and reads the loss back
    (device-to-host).
``jax_nvidia_train_nograph``
    The same program and steps with XLA's CUDA graphs off
    (``XLA_FLAGS=--xla_gpu_enable_command_buffer=``): every kernel is launched alone and
    carries its op (`name`) and HLO op, which the graph kernels of ``jax_nvidia_train`` lack.
``jax_nvidia_device_bound``
    The device kept busy: ``NVIDIA_STEPS`` steps of a stack of ``DEEP_LAYERS`` such blocks
    (model ``DEEP_MODEL``) on batches made on the GPU beforehand, each step ended by
    ``block_until_ready`` (no host work, no copy in the loop): the page of a healthy step.
``jax_nvidia_plain``
    No step markers: float32 convolutions and matrix products in a loop, a 64 MiB array sent
    to the GPU and read back, and an on-device copy: memcpys of all three directions beside
    kernels of several libraries (cuDNN, cuBLAS, XLA fusions).

Benchmark captures (``--only jax_nvidia_scale``, ``--only jax_nvidia_scale_graphs``, not
committed): ``SCALE_STEPS`` steps of the small block on device-resident batches, with CUDA
graphs off (about 2M events, most of them on the GPU or launching GPU work) or on (XLA's
default: kernels replayed inside graphs, named only by their module's HLO).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SEED = 1234
NVIDIA_STEPS = 6
BATCH, SEQ, MODEL, HEADS, FF = 16, 256, 512, 8, 2048
LR = 1e-3
CONV_CALLS = 5
DEEP_LAYERS, DEEP_MODEL, DEEP_FF = 6, 1024, 4096
BIG_COPY_BYTES = 64 * 1024 * 1024
SCALE_STEPS = int(os.environ.get("NVIDIA_SCALE_STEPS", "10000"))  # about 200 events a step


def _transformer(jax: Any, layers: int = 1, model: int = MODEL, ff: int = FF
                 ) -> tuple[Any, Any]:
    """Params and a jitted train_step(params, x, y) -> (params, loss) of `layers` blocks."""
    import jax.numpy as jnp

    key = jax.random.PRNGKey(SEED)
    shapes = {"wq": (model, model), "wk": (model, model), "wv": (model, model),
              "wo": (model, model), "w1": (model, ff), "w2": (ff, model)}
    params = []
    for _ in range(layers):
        layer = {}
        for name, shape in shapes.items():
            key, sub = jax.random.split(key)
            layer[name] = (jax.random.normal(sub, shape) / shape[0] ** 0.5).astype(jnp.bfloat16)
        params.append(layer)

    def norm(x: Any) -> Any:
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5)

    def block(p: Any, x: Any) -> Any:
        h = norm(x)
        q, k, v = (jnp.reshape(h @ p[w], (BATCH, SEQ, HEADS, model // HEADS))
                   for w in ("wq", "wk", "wv"))
        attn = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        x = x + jnp.reshape(attn, (BATCH, SEQ, model)) @ p["wo"]
        return x + jax.nn.gelu(norm(x) @ p["w1"]) @ p["w2"]

    def loss_fn(p: Any, x: Any, y: Any) -> Any:
        for layer in p:
            x = block(layer, x)
        return jnp.mean((x.astype(jnp.float32) - y) ** 2)

    def train_step(p: Any, x: Any, y: Any) -> tuple[Any, Any]:
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda w, g: w - LR * g, p, grads), loss

    return params, jax.jit(train_step)


def capture_train(jax: Any, logdir: Path) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(SEED)
    params, train_step = _transformer(jax)

    def batch() -> tuple[Any, Any]:
        x = rng.standard_normal((BATCH, SEQ, MODEL)).astype(np.float32)
        return jax.device_put(x.astype(jax.numpy.bfloat16)), jax.device_put(x * 0.5)

    for _ in range(2):  # compile and warm up outside the capture
        params, loss = train_step(params, *batch())
        float(loss)
    losses = []
    with jax.profiler.trace(str(logdir)):
        for step in range(NVIDIA_STEPS):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                params, loss = train_step(params, *batch())
                losses.append(float(loss))  # device-to-host copy, ends the step
    return {"steps": NVIDIA_STEPS, "batch": BATCH, "seq": SEQ, "model": MODEL, "heads": HEADS,
            "ff": FF, "dtype": "bfloat16", "losses": losses}


def capture_device_bound(jax: Any, logdir: Path) -> dict[str, Any]:
    import jax.numpy as jnp

    params, train_step = _transformer(jax, DEEP_LAYERS, DEEP_MODEL, DEEP_FF)
    keys = jax.random.split(jax.random.PRNGKey(SEED), NVIDIA_STEPS + 2)
    batches = [(jax.random.normal(k, (BATCH, SEQ, DEEP_MODEL)).astype(jnp.bfloat16),
                jax.random.normal(k, (BATCH, SEQ, DEEP_MODEL)) * 0.5) for k in keys]
    for x, y in batches[:2]:  # compile and warm up outside the capture
        params, loss = train_step(params, x, y)
        loss.block_until_ready()
    with jax.profiler.trace(str(logdir)):
        for step, (x, y) in enumerate(batches[2:]):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                params, loss = train_step(params, x, y)
                loss.block_until_ready()
    return {"steps": NVIDIA_STEPS, "layers": DEEP_LAYERS, "model": DEEP_MODEL, "ff": DEEP_FF,
            "batch": BATCH, "seq": SEQ, "dtype": "bfloat16", "loss": float(loss)}


def capture_plain(jax: Any, logdir: Path) -> dict[str, Any]:
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(SEED)

    @jax.jit
    def conv_net(x: Any, w1: Any, w2: Any, m: Any) -> Any:
        dims = ("NCHW", "OIHW", "NCHW")
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                                     dimension_numbers=dims))
        h = jax.lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=dims)
        flat = jnp.reshape(h, (h.shape[0], -1))
        return jnp.tanh(flat @ m).sum()

    x = jax.device_put(rng.standard_normal((32, 16, 64, 64)).astype(np.float32))
    w1 = jax.device_put(rng.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.1)
    w2 = jax.device_put(rng.standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.1)
    m = jax.device_put(rng.standard_normal((32 * 32 * 32, 256)).astype(np.float32) * 0.01)
    big = rng.standard_normal(BIG_COPY_BYTES // 4).astype(np.float32)
    copy = jax.jit(lambda a: a * 1.0 + 0.0)
    float(conv_net(x, w1, w2, m))
    copy(jax.device_put(big)).block_until_ready()
    results = []
    with jax.profiler.trace(str(logdir)):
        for _ in range(CONV_CALLS):
            results.append(float(conv_net(x, w1, w2, m)))
        on_gpu = jax.device_put(big)  # host to device, 64 MiB
        doubled = jnp.array(on_gpu, copy=True)  # device to device
        back = np.asarray(copy(doubled))  # device to host, 64 MiB
    return {"conv_calls": CONV_CALLS, "big_copy_bytes": BIG_COPY_BYTES,
            "round_trip_equal": bool(np.array_equal(back, big)), "results": results}


def capture_scale(jax: Any, logdir: Path) -> dict[str, Any]:
    """`SCALE_STEPS` steps of the small block on batches already on the GPU, kernels launched
    one by one (no CUDA graphs): a device-heavy capture of about a million events for
    scripts/bench.py, never a committed fixture."""
    params, train_step = _transformer(jax)
    keys = jax.random.split(jax.random.PRNGKey(SEED), 4)
    batches = [(jax.random.normal(k, (BATCH, SEQ, MODEL)).astype(jax.numpy.bfloat16),
                jax.random.normal(k, (BATCH, SEQ, MODEL)) * 0.5) for k in keys]
    for x, y in batches[:2]:  # compile and warm up outside the capture
        params, loss = train_step(params, x, y)
        loss.block_until_ready()
    with jax.profiler.trace(str(logdir)):
        for step in range(SCALE_STEPS):
            x, y = batches[2 + step % 2]
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                params, loss = train_step(params, x, y)
            if step % 50 == 49:
                loss.block_until_ready()  # keep the host at most 50 steps ahead
        loss.block_until_ready()
    return {"steps": SCALE_STEPS, "batch": BATCH, "seq": SEQ, "model": MODEL,
            "dtype": "bfloat16", "loss": float(loss)}


#: Fixtures, what runs them, and the XLA flags their process starts with.
FIXTURES = {
    "jax_nvidia_train": (capture_train, ""),
    "jax_nvidia_train_nograph": (capture_train, "--xla_gpu_enable_command_buffer="),
    "jax_nvidia_plain": (capture_plain, ""),
    "jax_nvidia_device_bound": (capture_device_bound, ""),
    # for the benchmark only (--only jax_nvidia_scale): not in the default set
    "jax_nvidia_scale": (capture_scale, "--xla_gpu_enable_command_buffer="),
    "jax_nvidia_scale_graphs": (capture_scale, ""),  # the same with CUDA graphs (the default)
}
#: What a plain run captures: the committed fixtures.
DEFAULT_FIXTURES = ["jax_nvidia_train", "jax_nvidia_train_nograph", "jax_nvidia_plain",
                    "jax_nvidia_device_bound"]


def capture_one(name: str, out: Path, work: Path) -> dict[str, Any]:
    """Runs fixture `name` in this process (its XLA flags already set) into `out`."""
    import jax

    logdir = work / name
    shutil.rmtree(logdir, ignore_errors=True)
    began = time.perf_counter()
    facts: dict[str, Any] = FIXTURES[name][0](jax, logdir)
    files = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    for path in files:
        shutil.copy(path, out / f"{name}.xplane.pb")
        facts["file"] = str(path.relative_to(logdir))
        facts["bytes"] = path.stat().st_size
    facts["seconds"] = round(time.perf_counter() - began, 2)
    facts["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/nvidia_capture_logdirs"))
    parser.add_argument("--only", choices=sorted(FIXTURES), action="append")
    parser.add_argument("--_child", dest="child", choices=sorted(FIXTURES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:  # one fixture in a process of its own (its XLA flags apply from the start)
        facts = capture_one(args.child, args.out, args.work)
        (args.out / f"{args.child}.json").write_text(json.dumps(facts))
        return 0
    import jax

    devices = jax.devices()
    facts: dict[str, Any] = {
        "jax": jax.__version__, "python": sys.version.split()[0], "platform": platform.platform(),
        "devices": [f"{d.platform}:{d.id} {getattr(d, 'device_kind', '')}" for d in devices],
        "captures": {}}
    if devices[0].platform != "gpu":
        print("no GPU visible to JAX:", facts["devices"], file=sys.stderr)
        return 1
    for name in args.only or DEFAULT_FIXTURES:
        env = dict(os.environ, XLA_FLAGS=" ".join(
            f for f in (os.environ.get("XLA_FLAGS", ""), FIXTURES[name][1]) if f))
        subprocess.run([sys.executable, __file__, "--out", str(args.out), "--work",
                        str(args.work), "--_child", name], check=True, env=env)
        result = args.out / f"{name}.json"
        facts["captures"][name] = json.loads(result.read_text())
        result.unlink()
        print(name, facts["captures"][name].get("bytes"), flush=True)
    (args.out / "captures.json").write_text(json.dumps(facts, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
