"""Capture real TensorFlow and JAX profiles and write them as test fixtures in ``tests/data/``.

Every fixture is a complete TensorBoard *logdir*, laid out exactly as a TensorBoard user
would have it on disk, i.e. profiles live at
``<logdir>/[<tb_run>/]plugins/profile/<session>/<host>.xplane.pb``. The profiles are
captured live with the installed TensorFlow (developed against tensorflow-cpu 2.21 and
Keras 3) or, for the ``jax_*`` fixtures, the installed JAX on CPU (developed against
``jax[cpu]`` 0.10.2 from PyPI); nothing is synthesised. TensorFlow and JAX are each imported
lazily, only by the fixtures that use them, so either one alone is enough for its own fixtures
(``--only NAME``).

Fixtures (names are also the directory names under ``tests/data/``):

``keras_fit``
    Keras 3 ``model.fit`` of a small conv net on random images, profiled by
    ``tf.keras.callbacks.TensorBoard(log_dir=..., profile_batch=(4, 7))``. Output:
    ``keras_fit/train/plugins/profile/<session>/<host>.xplane.pb`` plus the
    ``keras_fit/train/events.out.tfevents.*`` file Keras writes (the graph and epoch
    scalars), which is what makes TensorBoard list the ``train`` run.
``custom_loop``
    Custom training loop: ``tf.profiler.experimental.start(logdir)`` / ``stop()`` around
    10 steps of a ``tf.function`` train step on in-memory tensors, each step wrapped in
    ``tf.profiler.experimental.Trace('train', step_num=step, _r=1)``. The per-step losses
    are written afterwards with ``tf.summary`` into the logdir root, so there is an events
    file next to ``plugins/``.
``tfdata_slow``
    Input-bound tf.data pipeline: ``range -> map(py_function that sleeps) -> batch`` with a
    SEQUENTIAL map and no prefetch, feeding a small train step. ``next(iterator)`` happens
    inside the per-step ``Trace('train', step_num=..., _r=1)`` so the input wait is part
    of each step. The tf.data static optimizations ``map_and_batch_fusion`` and
    ``inject_prefetch`` are turned off, otherwise TF would fuse/prefetch behind our back.
    No events file (pure profiler output).
``tfdata_parallel``
    The same pipeline with ``num_parallel_calls=tf.data.AUTOTUNE`` on the map and
    ``.prefetch(tf.data.AUTOTUNE)`` at the end; its steps wait far less for input.
``tfdata_{map_seq,map_parallel,interleave,cache,batch_map,py_function}``
    Six small tf.data pipelines (``TFDATA_VARIANTS``) feeding the same small MLP train step,
    ``TFDATA_VARIANT_STEPS`` profiled steps each with ``next(iterator)`` inside the step's
    ``Trace('train', step_num=..., _r=1)``: a sequential ``map`` of TensorFlow ops, the same
    map with ``num_parallel_calls=AUTOTUNE`` and a ``prefetch``, an ``interleave`` of
    per-shard datasets, a ``cache`` filled during the warm-up and read back in the capture,
    ``batch`` *before* a vectorised ``map``, and a ``tf.py_function`` stage (numpy work, no
    sleep) with a ``prefetch``. Static optimizations ``map_and_batch_fusion``,
    ``inject_prefetch`` and ``map_parallelization`` are off in all of them, so each pipeline
    runs as written.
``two_hosts``
    Two separate worker *processes* (this script re-run with the hidden ``--_worker``
    flag) each call ``tf.profiler.experimental.server.start(port)`` on a free 127.0.0.1
    port and train in a loop with step markers. The parent captures both at once with
    ``tf.profiler.experimental.client.trace('grpc://127.0.0.1:P1,grpc://127.0.0.1:P2',
    logdir, duration_ms)``, giving one session with two host files named after the
    addresses (``127.0.0.1_P1.xplane.pb`` and ``127.0.0.1_P2.xplane.pb``). Worker 0 uses a
    batch of 32 and worker 1 a batch of 512, and each step emits a tiny
    ``worker_id#worker_index=N#`` TraceMe, so the two files are distinguishable by name
    and by content. Ports 60401/60402 are used when free (stable file names), otherwise
    OS-assigned ports. Workers are bounded in time and always killed.
``jax_cpu_steps``
    JAX on CPU: a ``jax.jit``-ted ``train_step`` (``jax.value_and_grad`` of the softmax
    cross-entropy of an MLP, then a plain SGD update) run ``JAX_STEPS`` times under
    ``jax.profiler.trace(logdir)``, each step wrapped in
    ``jax.profiler.StepTraceAnnotation("train", step_num=i)``. Inside every step the batch is
    built on the host with numpy (host time) before the jitted call, whose result is waited
    for (XLA time). The function is compiled and run ``JAX_WARMUP_STEPS`` times before the
    capture, so no compilation is in it. ``jax.profiler.trace`` writes
    ``plugins/profile/<session>/<host>.xplane.pb`` under the logdir, no events file.
``jax_cpu_plain``
    The same kind of program without any step annotation: the jitted ``train_step`` called
    ``JAX_PLAIN_TRAIN_CALLS`` times and, after every ``JAX_PLAIN_EVAL_EVERY``-th of them, a
    second, different jitted function (``eval_step``: loss and accuracy, no gradients), i.e.
    ``JAX_PLAIN_TRAIN_CALLS // JAX_PLAIN_EVAL_EVERY`` eval calls; the capture therefore has
    two XLA modules with distinct execution counts. Both are compiled before the capture.

Only ``*.xplane.pb`` and ``events.out.tfevents.*`` files are kept; anything else TensorFlow
writes (e.g. ``*.trace.json.gz``) is deleted. Session directories are named by TensorFlow
after the capture time (``YYYY_MM_DD_HH_MM_SS``) and host files after the machine's
hostname (local captures) or the ``host_port`` of the profiler server (remote captures),
so those names change on regeneration (JAX names them the same way). Seeds are fixed, but
timings (and therefore exact event counts) are inherently not reproducible.

Each fixture is produced in a fresh Python subprocess (``--_child NAME``), so TensorFlow
state from one capture never leaks into another. After writing, every ``.xplane.pb`` is
parsed with the project's own ``tb_profile_plugin.xspace.pb.xplane_pb2`` (needs only
``protobuf``; TensorFlow's ``tensorflow.tsl.profiler.protobuf.xplane_pb2`` is the fallback)
and a summary (size, planes,
lines, event counts, allocator / ``Iterator::`` / step-marker presence, executions of each
XLA module) is printed.

``--large OUT_DIR`` (never committed) writes a big single-host profile (about 2.4M events,
about 40 MB, ~15 s on 2 cores) into the logdir ``OUT_DIR`` for benchmarks: step-marked
iterations of nested ``tf.profiler.experimental.Trace`` scopes, an eager op and a
``tf.function`` of 80 tiny ops; a short calibration capture sizes the step count.

All TensorFlow captures use the default profiler options (host_tracer_level 2, no Python tracer):
in TF 2.21 ``ProfilerOptions`` passed to ``tf.profiler.experimental.start`` are ignored
(the C++ side logs ``host_tracer_level expects an i value``).

Usage::

    python scripts/make_fixtures.py                    # regenerate all committed fixtures
    python scripts/make_fixtures.py --only two_hosts   # regenerate one fixture
    python scripts/make_fixtures.py --only jax_cpu_steps --only jax_cpu_plain   # JAX only
    python scripts/make_fixtures.py --large /tmp/tbp_large
    python scripts/make_fixtures.py --summarize tests/data   # only print the summaries
    /tmp/torch_venv/bin/python scripts/make_fixtures.py --pytorch [OUT]   # PyTorch only

PyTorch fixtures (``--pytorch [OUT]``, default ``tests/data``; needs only torch, developed
against torch 2.13.0+cpu; TensorFlow is not imported). Each is a TensorBoard logdir with one
run directory ``run0`` holding what ``torch.profiler.tensorboard_trace_handler(dir,
worker_name=...)`` wrote: ``<worker>.<time_ns>.pt.trace.json[.gz]``. All use
``activities=[CPU], record_shapes=True, profile_memory=True, with_stack=False``; the
training ones use ``schedule(wait=1, warmup=1, active=3)`` and ``prof.step()`` after each step,
so the trace holds ``ProfilerStep#2..#4``.

``pytorch_cpu_train``
    MLP 64-256-256-10, SGD, fed by ``DataLoader(num_workers=2)`` over a map-style dataset
    that sleeps ``PYTORCH_LOAD_SLEEP_S`` per sample (input-bound steps).
``pytorch_cpu_gzip``
    Small CNN on in-memory images, ``DataLoader(num_workers=0)``, ``use_gzip=True``.
``pytorch_gloo_2ranks``
    Two ranks (``torch.multiprocessing.spawn``) with ``torch.distributed`` gloo on 127.0.0.1,
    ``DistributedDataParallel`` of the MLP; worker names ``rank0``/``rank1`` in one run
    directory. Rank 1 sleeps ``PYTORCH_GLOO_STRAGGLER_SLEEP_S`` per step inside
    ``record_function("slow_data_rank1")``, so rank 0 waits in ``gloo:all_reduce``.
``pytorch_cpu_nosteps``
    Inference only: three ``record_function("inference")`` forward passes under
    ``no_grad``, no schedule and no ``prof.step()``, i.e. no ``ProfilerStep`` at all.

Regenerating a fixture first deletes its directory under the output directory
(``--out``, default ``tests/data``); ``tests/data/README.md`` is never touched.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import select
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "data"
FIXTURES: tuple[str, ...] = (
    "keras_fit",
    "custom_loop",
    "tfdata_slow",
    "tfdata_parallel",
    "tfdata_map_seq",
    "tfdata_map_parallel",
    "tfdata_interleave",
    "tfdata_cache",
    "tfdata_batch_map",
    "tfdata_py_function",
    "two_hosts",
    "jax_cpu_steps",
    "jax_cpu_plain",
)
SEED = 1234
MAX_FIXTURE_FILE_BYTES = 2 * 1024 * 1024
CHILD_TIMEOUT_S = 600
WORKER_READY_TIMEOUT_S = 180.0
WORKER_MAX_SECONDS = 240.0
PREFERRED_WORKER_PORTS = (60401, 60402)
TWO_HOSTS_DURATION_MS = 1200
LARGE_TARGET_EVENTS = 2_400_000
# tf.data variants: batch, warm-up and profiled steps (18 kept: first and last are dropped),
# element feature width, MLP widths (a few ms per step on 2 cores).
TFDATA_VARIANT_BATCH = 16
TFDATA_VARIANT_WARMUP = 4
TFDATA_VARIANT_STEPS = 20
TFDATA_VARIANT_FEATURES = 128
TFDATA_VARIANT_WIDTHS = (128, 512, 512, 10)
# JAX fixtures: MLP widths, batch (about 1.5 ms per train step on 2 cores), SGD rate, counts.
JAX_WIDTHS = (64, 256, 256, 10)
JAX_BATCH = 128
JAX_LR = 0.01
JAX_WARMUP_STEPS = 2  # compile + run before the capture (no compilation in it)
JAX_STEPS = 20  # jax_cpu_steps: StepTraceAnnotation("train", step_num=0..JAX_STEPS-1)
JAX_PLAIN_TRAIN_CALLS = 10  # jax_cpu_plain: train_step executions
JAX_PLAIN_EVAL_EVERY = 3  # jax_cpu_plain: eval_step after every 3rd train_step (3 calls)


# --------------------------------------------------------------------------------------
# Helpers shared by the capture functions (TensorFlow and JAX are imported lazily
# everywhere so that --help and --summarize stay fast, the log level is set before the
# import, and the TensorFlow fixtures work without JAX installed and vice versa).
# --------------------------------------------------------------------------------------


def _import_tf() -> Any:
    """Import TensorFlow quietly (C++ INFO logs off, warnings kept) and seed everything."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    import tensorflow as tf

    tf.keras.utils.set_random_seed(SEED)
    return tf


def _import_jax() -> Any:
    """Import JAX restricted to the CPU backend (no accelerator probing)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def _xplane_pb2() -> Any:
    """The XPlane protobuf module: the project's own copy, else TensorFlow's."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        from tb_profile_plugin.xspace.pb import xplane_pb2
    except ImportError:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    return xplane_pb2


def _log(msg: str) -> None:
    print(f"[make_fixtures] {msg}", flush=True)


def _keep_only_profile_files(logdir: Path) -> list[Path]:
    """Delete everything under ``logdir`` except xplane files and tfevents files."""
    removed: list[Path] = []
    for path in sorted(logdir.rglob("*")):
        if path.is_file() and not (
            path.name.endswith(".xplane.pb") or path.name.startswith("events.out.tfevents.")
        ):
            path.unlink()
            removed.append(path)
    # Drop directories left empty (deepest first).
    for path in sorted(logdir.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
            removed.append(path)
    return removed


def _step_trace(tf: Any, step: int) -> Any:
    """The canonical step marker understood by the TensorFlow profiler tools."""
    return tf.profiler.experimental.Trace("train", step_num=step, _r=1)


# --------------------------------------------------------------------------------------
# Fixture capture functions; each runs in its own child process and gets the logdir.
# --------------------------------------------------------------------------------------


def make_keras_fit(logdir: Path) -> None:
    """Keras 3 model.fit profiled by the TensorBoard callback (batches 4..7, 1-based)."""
    tf = _import_tf()
    import numpy as np

    rng = np.random.default_rng(SEED)
    x = rng.random((1024, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, size=(1024,), dtype=np.int64)
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(28, 28, 1)),
            tf.keras.layers.Conv2D(8, 3, activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(16, 3, activation="relu"),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    callback = tf.keras.callbacks.TensorBoard(log_dir=str(logdir), profile_batch=(4, 7))
    model.fit(x, y, batch_size=64, epochs=1, shuffle=False, callbacks=[callback], verbose=0)


def _mlp_train_step(tf: Any, widths: Sequence[int], lr: float = 0.01) -> tuple[Any, Any]:
    """Build a small MLP and a compiled ``train_step(x, y) -> loss``."""
    layers: list[Any] = [tf.keras.Input(shape=(widths[0],))]
    layers += [tf.keras.layers.Dense(w, activation="relu") for w in widths[1:-1]]
    layers.append(tf.keras.layers.Dense(widths[-1]))
    model = tf.keras.Sequential(layers)
    optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def train_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return model, tf.function(train_step)


def make_custom_loop(logdir: Path) -> None:
    """tf.profiler.experimental.start/stop around 8 Trace-marked tf.function steps."""
    tf = _import_tf()
    _, train_step = _mlp_train_step(tf, (64, 256, 256, 10))
    x = tf.random.stateless_normal((128, 64), seed=(SEED, 0))
    y = tf.random.stateless_uniform((128,), seed=(SEED, 1), maxval=10, dtype=tf.int64)
    for _ in range(2):  # trace + warm up outside the capture
        train_step(x, y)

    losses: list[float] = []
    tf.profiler.experimental.start(str(logdir))
    try:
        for step in range(10):
            with _step_trace(tf, step):
                loss = train_step(x, y)
            losses.append(float(loss))
    finally:
        tf.profiler.experimental.stop()

    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for step, value in enumerate(losses):
            tf.summary.scalar("loss", value, step=step)
    writer.close()


def _tfdata_pipeline(tf: Any, parallel: bool, num_elements: int, batch: int) -> Any:
    """range -> map(slow py_function) -> batch [-> prefetch], parallel or sequential."""
    import numpy as np

    sleep_s = 0.002

    def slow_load(index: Any) -> tuple[Any, Any]:
        i = int(index.numpy())
        time.sleep(sleep_s)  # simulate slow I/O / decoding
        rng = np.random.default_rng(SEED + i)
        features = rng.standard_normal(128).astype(np.float32)
        return features, np.int64(i % 10)

    def load(index: Any) -> tuple[Any, Any]:
        features, label = tf.py_function(slow_load, [index], [tf.float32, tf.int64])
        features.set_shape((128,))
        label.set_shape(())
        return features, label

    ds = tf.data.Dataset.range(num_elements)
    if parallel:
        ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
        ds = ds.map(load)
    ds = ds.batch(batch, drop_remainder=True)
    if parallel:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    # By default tf.data's static optimizations would (a) fuse map+batch into a MapAndBatch
    # iterator that runs ahead in a background thread and (b) inject a prefetch after the
    # batch; either one would hide the slow map. Turn both off so that the pipelines run as
    # written (the parallel one has its own explicit prefetch).
    options = tf.data.Options()
    options.experimental_optimization.map_and_batch_fusion = False
    options.experimental_optimization.inject_prefetch = False
    return ds.with_options(options)


def _make_tfdata(logdir: Path, parallel: bool) -> None:
    tf = _import_tf()
    batch, warmup_steps, steps = 16, 3, 8
    ds = _tfdata_pipeline(tf, parallel, (warmup_steps + steps) * batch, batch)
    # A deliberately chunky step (~10-20 ms on 2 cores) that prefetching can hide behind.
    _, train_step = _mlp_train_step(tf, (128, 3072, 3072, 10))
    iterator = iter(ds)
    for _ in range(warmup_steps):  # trace the function, let AUTOTUNE ramp up
        x, y = next(iterator)
        train_step(x, y)

    tf.profiler.experimental.start(str(logdir))
    try:
        for step in range(steps):
            with _step_trace(tf, step):
                x, y = next(iterator)  # input wait is inside the step
                train_step(x, y)
    finally:
        tf.profiler.experimental.stop()


def make_tfdata_slow(logdir: Path) -> None:
    """Input-bound: sequential slow map, no prefetch."""
    _make_tfdata(logdir, parallel=False)


def make_tfdata_parallel(logdir: Path) -> None:
    """Same pipeline with AUTOTUNE parallel map and prefetch."""
    _make_tfdata(logdir, parallel=True)


def _tfdata_variant_pipeline(tf: Any, variant: str, num_elements: int) -> Any:
    """The tf.data pipeline of one ``tfdata_<variant>`` fixture, yielding (x, y) batches."""
    import numpy as np

    width, batch = TFDATA_VARIANT_FEATURES, TFDATA_VARIANT_BATCH
    mixing = tf.constant(np.random.default_rng(SEED).standard_normal((width, width)),
                         tf.float32)

    def features(index: Any) -> tuple[Any, Any]:
        """One element from TensorFlow ops: seeded noise, two dense mixes, a label."""
        seed = tf.stack([tf.cast(index, tf.int32), 0])
        x = tf.random.stateless_normal((1, width), seed=seed)
        x = tf.tanh(tf.matmul(tf.tanh(tf.matmul(x, mixing)), mixing))
        return tf.reshape(x, (width,)), index % 10

    def batch_features(indices: Any) -> tuple[Any, Any]:
        """The same work on a whole batch of indices at once (map after batch)."""
        x = tf.random.stateless_normal((tf.shape(indices)[0], width), seed=(SEED, 1))
        x = tf.tanh(tf.matmul(tf.tanh(tf.matmul(x, mixing)), mixing))
        return x, indices % 10

    def numpy_features(index: Any) -> tuple[Any, Any]:
        rng = np.random.default_rng(SEED + int(index.numpy()))
        x = rng.standard_normal((64, width)).astype(np.float32)
        x = np.tanh(x @ np.tanh(x.T @ x / width)).mean(axis=0).astype(np.float32)
        return x, np.int64(int(index.numpy()) % 10)

    def py_features(index: Any) -> tuple[Any, Any]:
        x, y = tf.py_function(numpy_features, [index], [tf.float32, tf.int64])
        x.set_shape((width,))
        y.set_shape(())
        return x, y

    ds = tf.data.Dataset.range(num_elements)
    if variant == "map_seq":
        ds = ds.map(features).batch(batch, drop_remainder=True)
    elif variant == "map_parallel":
        ds = ds.map(features, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        ds = ds.batch(batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    elif variant == "interleave":
        shards = 4
        per_shard = -(-num_elements // shards)
        ds = tf.data.Dataset.range(shards).interleave(
            lambda shard: tf.data.Dataset.range(shard * per_shard,
                                                (shard + 1) * per_shard).map(features),
            cycle_length=2, num_parallel_calls=2, deterministic=True)
        ds = ds.batch(batch, drop_remainder=True).prefetch(2)
    elif variant == "cache":
        # Two batches' worth of elements, cached while the warm-up reads them, then repeated.
        ds = tf.data.Dataset.range(2 * batch).map(features).cache().repeat()
        ds = ds.batch(batch, drop_remainder=True)
    elif variant == "batch_map":
        ds = ds.batch(batch, drop_remainder=True).map(batch_features)
    elif variant == "py_function":
        ds = ds.map(py_features).batch(batch, drop_remainder=True).prefetch(1)
    else:
        raise ValueError(f"unknown tf.data variant {variant!r}")
    options = tf.data.Options()
    options.experimental_optimization.map_and_batch_fusion = False
    options.experimental_optimization.inject_prefetch = False
    # TF would otherwise run a map of stateless functions in parallel behind our back.
    options.experimental_optimization.map_parallelization = False
    return ds.with_options(options)


def _make_tfdata_variant(logdir: Path, variant: str) -> None:
    """Profile ``TFDATA_VARIANT_STEPS`` steps of a small MLP fed by one tf.data variant."""
    tf = _import_tf()
    warmup, steps = TFDATA_VARIANT_WARMUP, TFDATA_VARIANT_STEPS
    ds = _tfdata_variant_pipeline(tf, variant, (warmup + steps) * TFDATA_VARIANT_BATCH)
    _, train_step = _mlp_train_step(tf, TFDATA_VARIANT_WIDTHS)
    iterator = iter(ds)
    for _ in range(warmup):  # trace the function, fill the cache, let AUTOTUNE ramp up
        x, y = next(iterator)
        train_step(x, y)
    tf.profiler.experimental.start(str(logdir))
    try:
        for step in range(steps):
            with _step_trace(tf, step):
                x, y = next(iterator)  # input wait is inside the step
                train_step(x, y)
    finally:
        tf.profiler.experimental.stop()


TFDATA_VARIANTS = ("map_seq", "map_parallel", "interleave", "cache", "batch_map",
                   "py_function")


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    """Prefer stable ports (stable file names); fall back to OS-assigned free ports."""
    if all(_port_is_free(p) for p in PREFERRED_WORKER_PORTS[:count]):
        return list(PREFERRED_WORKER_PORTS[:count])
    ports: list[int] = []
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
            ports.append(sock.getsockname()[1])
    finally:
        for sock in socks:
            sock.close()
    return ports


def _wait_ready(proc: subprocess.Popen[str], deadline: float) -> None:
    """Block until a worker prints READY (or fail on exit / timeout)."""
    assert proc.stdout is not None
    while (remaining := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([proc.stdout], [], [], remaining)
        if not readable:
            break
        line = proc.stdout.readline()  # workers only ever print whole, flushed lines
        if not line:
            raise RuntimeError(f"worker {proc.args!r} exited early (rc={proc.poll()})")
        if line.strip() == "READY":
            return
    raise TimeoutError(f"worker {proc.args!r} not ready in time")


def _stop_process(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def make_two_hosts(logdir: Path) -> None:
    """Two worker processes with profiler servers, captured together by the client."""
    ports = _free_ports(2)
    procs: list[subprocess.Popen[str]] = []
    try:
        for index, port in enumerate(ports):
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--_worker",
                "--port",
                str(port),
                "--worker-index",
                str(index),
                "--max-seconds",
                str(WORKER_MAX_SECONDS),
            ]
            _log(f"starting worker {index} on 127.0.0.1:{port}")
            # stdout is READY-line only; worker logs go to our stderr.
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
        for proc in procs:
            _wait_ready(proc, deadline)

        tf = _import_tf()
        service_addr = ",".join(f"grpc://127.0.0.1:{port}" for port in ports)
        _log(f"capturing {service_addr} for {TWO_HOSTS_DURATION_MS} ms")
        tf.profiler.experimental.client.trace(service_addr, str(logdir), TWO_HOSTS_DURATION_MS)
    finally:
        for proc in procs:
            _stop_process(proc)


def run_worker(port: int, index: int, max_seconds: float) -> None:
    """Hidden worker mode for two_hosts: profiler server + Trace-marked steps.

    Runs until killed by the parent, for at most ``max_seconds``, or until the parent
    process disappears (e.g. it was SIGKILLed before its ``finally`` could run).
    """
    start = time.monotonic()
    parent = os.getppid()
    tf = _import_tf()
    tf.profiler.experimental.server.start(port)
    batch = 32 if index == 0 else 512
    _, train_step = _mlp_train_step(tf, (64, 256, 256, 10))
    x = tf.random.stateless_normal((batch, 64), seed=(SEED, index))
    y = tf.random.stateless_uniform((batch,), seed=(SEED, 10 + index), maxval=10, dtype=tf.int64)
    for _ in range(3):
        train_step(x, y)
    print("READY", flush=True)
    step = 0
    while time.monotonic() - start < max_seconds and os.getppid() == parent:
        with tf.profiler.experimental.Trace("worker_id", worker_index=index):
            pass
        with _step_trace(tf, step):
            train_step(x, y)
        step += 1
        time.sleep(0.005)  # keep both workers from saturating the 2 cores


# --------------------------------------------------------------------------------------
# JAX fixtures (CPU backend); each runs in its own child process and gets the logdir.
# --------------------------------------------------------------------------------------


def _jax_mlp(jax: Any) -> tuple[Any, Any, Any]:
    """MLP params of ``JAX_WIDTHS`` plus jitted ``train_step`` and ``eval_step``.

    ``train_step(params, x, y) -> (new_params, loss)`` is ``jax.value_and_grad`` of the mean
    softmax cross-entropy followed by an SGD update; ``eval_step(params, x, y) -> (loss,
    accuracy)`` is a forward pass only, so the two compile to different XLA modules.
    """
    import jax.numpy as jnp

    key = jax.random.PRNGKey(SEED)
    params: list[tuple[Any, Any]] = []
    for fan_in, fan_out in zip(JAX_WIDTHS[:-1], JAX_WIDTHS[1:], strict=True):
        key, sub = jax.random.split(key)
        scale = (2.0 / fan_in) ** 0.5
        params.append((jax.random.normal(sub, (fan_in, fan_out)) * scale, jnp.zeros(fan_out)))

    def logits_fn(params: Any, x: Any) -> Any:
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        return h @ w + b

    def loss_fn(params: Any, x: Any, y: Any) -> Any:
        log_probs = jax.nn.log_softmax(logits_fn(params, x))
        return -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))

    def train_step(params: Any, x: Any, y: Any) -> tuple[Any, Any]:
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        new_params = jax.tree_util.tree_map(lambda p, g: p - JAX_LR * g, params, grads)
        return new_params, loss

    def eval_step(params: Any, x: Any, y: Any) -> tuple[Any, Any]:
        logits = logits_fn(params, x)
        log_probs = jax.nn.log_softmax(logits)
        loss = -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))
        return loss, jnp.mean(jnp.argmax(logits, axis=1) == y)

    return params, jax.jit(train_step), jax.jit(eval_step)


def _jax_batch(rng: Any) -> tuple[Any, Any]:
    """Host-side work of a step: a random batch built with numpy."""
    import numpy as np

    x = rng.standard_normal((JAX_BATCH, JAX_WIDTHS[0])).astype(np.float32)
    y = rng.integers(0, JAX_WIDTHS[-1], size=(JAX_BATCH,)).astype(np.int32)
    return x, y


def make_jax_cpu_steps(logdir: Path) -> None:
    """jax.profiler.trace around JAX_STEPS StepTraceAnnotation-marked jitted train steps."""
    jax = _import_jax()
    import numpy as np

    rng = np.random.default_rng(SEED)
    params, train_step, _ = _jax_mlp(jax)
    for _ in range(JAX_WARMUP_STEPS):  # compile + warm up outside the capture
        params, loss = train_step(params, *_jax_batch(rng))
        loss.block_until_ready()

    with jax.profiler.trace(str(logdir)):
        for step in range(JAX_STEPS):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                x, y = _jax_batch(rng)
                params, loss = train_step(params, x, y)
                loss.block_until_ready()


def make_jax_cpu_plain(logdir: Path) -> None:
    """No step markers: JAX_PLAIN_TRAIN_CALLS train_step calls plus a few eval_step calls."""
    jax = _import_jax()
    import numpy as np

    rng = np.random.default_rng(SEED)
    params, train_step, eval_step = _jax_mlp(jax)
    for _ in range(JAX_WARMUP_STEPS):  # compile both functions outside the capture
        params, loss = train_step(params, *_jax_batch(rng))
        loss.block_until_ready()
    eval_step(params, *_jax_batch(rng))[0].block_until_ready()

    with jax.profiler.trace(str(logdir)):
        for call in range(JAX_PLAIN_TRAIN_CALLS):
            x, y = _jax_batch(rng)
            params, loss = train_step(params, x, y)
            loss.block_until_ready()
            if (call + 1) % JAX_PLAIN_EVAL_EVERY == 0:
                eval_loss, _ = eval_step(params, *_jax_batch(rng))
                eval_loss.block_until_ready()


# --------------------------------------------------------------------------------------
# The large benchmark profile.
# --------------------------------------------------------------------------------------


def _count_events(path: Path) -> int:
    xplane_pb2 = _xplane_pb2()
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return sum(len(line.events) for plane in space.planes for line in plane.lines)


def make_large(logdir: Path, target_events: int = LARGE_TARGET_EVENTS) -> None:
    """A big host profile (~``target_events`` events) for benchmarks.

    Every step is a ``train`` step marker around: an eager op inside an ``input`` scope, a
    ``tf.function`` of 80 tiny element-wise ops (executor events on the ``tf_Compute``
    threads) and eight ``stage_<k>`` TraceMe scopes each wrapping a ``leaf`` scope (Python
    thread). A short calibration capture (discarded) measures events per step, so the real
    capture lands close to the target regardless of thread scheduling.
    """
    tf = _import_tf()
    trace = tf.profiler.experimental.Trace

    def small_ops(x: Any) -> Any:
        for _ in range(40):  # unrolled at trace time: 80 ops
            x = x * 1.0001 + 0.5
        return x

    many_small_ops = tf.function(small_ops)

    x = tf.ones((16,))

    def run(steps: int) -> None:
        nonlocal x
        for step in range(steps):
            with trace("train", step_num=step, _r=1):
                with trace("input"):
                    x = x + 1.0
                x = many_small_ops(x)
                for k in range(8):
                    with trace(f"stage_{k}"), trace("leaf"):
                        pass

    run(3)  # trace the tf.function outside any capture
    calibration_steps = 500
    calib_dir = logdir / "_calibration"
    tf.profiler.experimental.start(str(calib_dir))
    try:
        run(calibration_steps)
    finally:
        tf.profiler.experimental.stop()
    calib_events = sum(_count_events(p) for p in calib_dir.rglob("*.xplane.pb"))
    shutil.rmtree(calib_dir)
    steps = int(target_events * calibration_steps / max(calib_events, 1))
    _log(f"large: {calib_events / calibration_steps:.1f} events/step -> {steps} steps")

    t0 = time.monotonic()
    tf.profiler.experimental.start(str(logdir))
    try:
        run(steps)
    finally:
        tf.profiler.experimental.stop()
    _log(f"large: {steps} steps traced + saved in {time.monotonic() - t0:.1f}s")


CAPTURES: dict[str, Callable[[Path], None]] = {
    "keras_fit": make_keras_fit,
    "custom_loop": make_custom_loop,
    "tfdata_slow": make_tfdata_slow,
    "tfdata_parallel": make_tfdata_parallel,
    **{f"tfdata_{variant}": functools.partial(_make_tfdata_variant, variant=variant)
       for variant in TFDATA_VARIANTS},
    "two_hosts": make_two_hosts,
    "jax_cpu_steps": make_jax_cpu_steps,
    "jax_cpu_plain": make_jax_cpu_plain,
}


# --------------------------------------------------------------------------------------
# Summaries (parsing with xplane_pb2).
# --------------------------------------------------------------------------------------


def _iter_xplane_files(root: Path) -> Iterator[Path]:
    yield from sorted(root.rglob("*.xplane.pb"))


def summarize_xplane(path: Path, verbose: bool = True) -> dict[str, Any]:
    """Parse one xplane.pb and return (and optionally print) its key facts."""
    xplane_pb2 = _xplane_pb2()
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    total = 0
    names: collections.Counter[str] = collections.Counter()
    planes: list[dict[str, Any]] = []
    stat_names: set[str] = set()
    module_runs: dict[str, set[int]] = collections.defaultdict(set)
    for plane in space.planes:
        meta = plane.event_metadata
        stat_ids = {m.id: m.name for m in plane.stat_metadata.values()}
        plane_events = 0
        lines: list[tuple[str, int]] = []
        for line in plane.lines:
            plane_events += len(line.events)
            lines.append((line.name, len(line.events)))
            for event in line.events:
                names[meta[event.metadata_id].name] += 1
                stats = {stat_ids.get(s.metadata_id): s for s in event.stats}
                if "hlo_module" in stats and "run_id" in stats:  # an XLA op (JAX, XLA CPU)
                    module = stats["hlo_module"]
                    module_name = module.str_value or stat_ids.get(module.ref_value, "")
                    run = stats["run_id"]
                    module_runs[module_name].add(run.int64_value or run.uint64_value)
        stat_names.update(m.name for m in plane.stat_metadata.values())
        total += plane_events
        planes.append({"name": plane.name, "events": plane_events, "lines": lines})
    facts: dict[str, Any] = {
        "path": str(path),
        "bytes": path.stat().st_size,
        "hostnames": list(space.hostnames),
        "events": total,
        "planes": planes,
        "alloc_events": names["MemoryAllocation"] + names["MemoryDeallocation"],
        "iterator_events": sum(n for k, n in names.items() if k.startswith("Iterator::")),
        "step_markers": {k: n for k, n in names.items() if k in ("train", "Profiled batch")},
        "top_events": names.most_common(8),
        "errors": list(space.errors),
        "warnings": list(space.warnings),
        "has_step_num_stat": "step_num" in stat_names,
        "xla_module_runs": {k: len(v) for k, v in sorted(module_runs.items())},
    }
    if verbose:
        print(f"{path}  {facts['bytes'] / 1024:.1f} KiB  events={total}", flush=True)
        print(
            f"    hostnames={facts['hostnames']} errors={facts['errors']}"
            f" warnings={facts['warnings']}"
        )
        for plane in planes:
            line_desc = ", ".join(f"{n}:{c}" for n, c in plane["lines"][:12])
            more = "" if len(plane["lines"]) <= 12 else f", ... ({len(plane['lines'])} lines)"
            print(f"    plane {plane['name']!r}: {plane['events']} events; {line_desc}{more}")
        print(
            f"    MemoryAllocation/Deallocation={facts['alloc_events']}"
            f" Iterator::*={facts['iterator_events']} step markers={facts['step_markers']}"
        )
        print(f"    top events: {facts['top_events']}")
        if facts["xla_module_runs"]:
            print(f"    XLA module executions (distinct run_id): {facts['xla_module_runs']}")
    return facts


def summarize_tree(root: Path) -> int:
    """Summarize every xplane under ``root``; return the total size of all files."""
    total_bytes = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        total_bytes += path.stat().st_size
    for path in _iter_xplane_files(root):
        summarize_xplane(path)
    return total_bytes


# --------------------------------------------------------------------------------------
# Orchestration.
# --------------------------------------------------------------------------------------


def _run_child(args: list[str]) -> None:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    subprocess.run(cmd, check=True, timeout=CHILD_TIMEOUT_S)


def _check_fixture(logdir: Path) -> None:
    files = list(_iter_xplane_files(logdir))
    if not files:
        raise RuntimeError(f"{logdir}: no .xplane.pb was written")
    for path in files:
        facts = summarize_xplane(path)
        if facts["events"] == 0:
            raise RuntimeError(f"{path}: no events")
        if facts["bytes"] > MAX_FIXTURE_FILE_BYTES:
            raise RuntimeError(f"{path}: {facts['bytes']} bytes is too big for a fixture")


def regenerate(out_dir: Path, names: Sequence[str]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        logdir = out_dir / name
        if logdir.exists():
            shutil.rmtree(logdir)
        _log(f"capturing {name} -> {logdir}")
        t0 = time.monotonic()
        _run_child(["--_child", name, "--out", str(out_dir)])
        removed = _keep_only_profile_files(logdir)
        for path in removed:
            _log(f"removed {path}")
        _log(f"{name} done in {time.monotonic() - t0:.1f}s")
        _check_fixture(logdir)
    sizes = {
        name: sum(p.stat().st_size for p in (out_dir / name).rglob("*") if p.is_file())
        for name in FIXTURES
        if (out_dir / name).exists()
    }
    for name, size in sizes.items():
        _log(f"{name}: {size / 1024:.1f} KiB on disk")
    _log(f"all fixtures: {sum(sizes.values()) / 1024 / 1024:.2f} MiB")


def generate_large(logdir: Path) -> None:
    if logdir.exists():
        shutil.rmtree(logdir)
    t0 = time.monotonic()
    _run_child(["--_child", "large", "--out", str(logdir)])
    _keep_only_profile_files(logdir)
    elapsed = time.monotonic() - t0
    for path in _iter_xplane_files(logdir):
        facts = summarize_xplane(path, verbose=False)
        _log(
            f"large: {path} events={facts['events']} "
            f"size={facts['bytes'] / 1e6:.1f} MB total time={elapsed:.1f}s"
        )


# --------------------------------------------------------------------------------------
# PyTorch fixtures (``--pytorch [OUT]``): Kineto Chrome-trace JSON written by
# ``torch.profiler``. torch is imported only inside these functions, never TensorFlow.
# --------------------------------------------------------------------------------------

PYTORCH_FIXTURES: tuple[str, ...] = (
    "pytorch_cpu_train",
    "pytorch_cpu_gzip",
    "pytorch_gloo_2ranks",
    "pytorch_cpu_nosteps",
)
PYTORCH_RUN = "run0"  # the TensorBoard run directory inside every pytorch_* logdir
PYTORCH_WAIT, PYTORCH_WARMUP, PYTORCH_ACTIVE = 1, 1, 3  # torch.profiler.schedule(...)
PYTORCH_LOAD_SLEEP_S = 0.002  # per-sample "decode" time in the Dataset (input-bound steps)
PYTORCH_GLOO_STRAGGLER_SLEEP_S = 0.03  # extra per-step data time on rank 1 only
PYTORCH_GLOO_PORT = 29531
MAX_PYTORCH_FILE_BYTES = 1_500_000
MAX_PYTORCH_TOTAL_BYTES = 5_000_000


def _import_torch() -> Any:
    """Import torch with a fixed seed and one intra-op thread (steadier timings on 2 cores)."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    return torch


def _torch_mlp(torch: Any, widths: Sequence[int]) -> Any:
    layers: list[Any] = []
    for i, (w_in, w_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        layers.append(torch.nn.Linear(w_in, w_out))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class _SlowDataset:
    """Map-style dataset: seeded random features, a label, and a short sleep per sample."""

    def __init__(self, size: int, features: int, sleep_s: float) -> None:
        self.size, self.features, self.sleep_s = size, features, sleep_s

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        import torch

        time.sleep(self.sleep_s)
        gen = torch.Generator().manual_seed(SEED + index)
        return torch.randn(self.features, generator=gen), torch.tensor(index % 10)


def _torch_profile(torch: Any, trace_dir: Path, worker: str, *, steps: bool,
                   use_gzip: bool = False) -> Any:
    """``torch.profiler.profile`` (CPU, shapes, memory, no stack) with the TensorBoard handler;
    with ``steps`` a wait/warmup/active schedule (the caller calls ``prof.step()``)."""
    prof = torch.profiler
    return prof.profile(
        activities=[prof.ProfilerActivity.CPU],
        schedule=(prof.schedule(wait=PYTORCH_WAIT, warmup=PYTORCH_WARMUP,
                                active=PYTORCH_ACTIVE) if steps else None),
        on_trace_ready=prof.tensorboard_trace_handler(str(trace_dir), worker_name=worker,
                                                      use_gzip=use_gzip),
        record_shapes=True,
        profile_memory=True,
        with_stack=False,
    )


def _torch_train(torch: Any, model: Any, loader: Any, prof: Any, steps: int,
                 step_hook: Callable[[], None] | None = None) -> None:
    """SGD with cross-entropy over ``loader`` for ``steps`` steps, ``prof.step()`` after each."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = iter(loader)
    for _ in range(steps):
        x, y = next(batches)
        if step_hook is not None:
            step_hook()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        prof.step()


def make_pytorch_cpu_train(logdir: Path) -> None:
    """MLP trained from a DataLoader with 2 worker processes; schedule wait1/warmup1/active3."""
    torch = _import_torch()
    model = _torch_mlp(torch, (64, 256, 256, 10))
    total = PYTORCH_WAIT + PYTORCH_WARMUP + PYTORCH_ACTIVE
    loader = torch.utils.data.DataLoader(
        _SlowDataset(32 * (total + 2), 64, PYTORCH_LOAD_SLEEP_S), batch_size=32,
        num_workers=2, shuffle=False)
    with _torch_profile(torch, logdir / PYTORCH_RUN, "worker0", steps=True) as prof:
        _torch_train(torch, model, loader, prof, total)


def make_pytorch_cpu_gzip(logdir: Path) -> None:
    """Small CNN, in-process data (num_workers=0), trace written gzip-compressed."""
    torch = _import_torch()
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3),
                          nn.ReLU(), nn.Flatten(), nn.Linear(16 * 11 * 11, 10))
    images = torch.randn(16 * 8, 1, 28, 28)
    labels = torch.randint(0, 10, (16 * 8,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels),
                                         batch_size=16, num_workers=0)
    total = PYTORCH_WAIT + PYTORCH_WARMUP + PYTORCH_ACTIVE
    with _torch_profile(torch, logdir / PYTORCH_RUN, "worker0", steps=True,
                        use_gzip=True) as prof:
        _torch_train(torch, model, loader, prof, total)


def _pytorch_gloo_rank(rank: int, world_size: int, logdir: str) -> None:
    """One rank of ``pytorch_gloo_2ranks`` (run by ``torch.multiprocessing.spawn``)."""
    torch = _import_torch()
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        model = torch.nn.parallel.DistributedDataParallel(_torch_mlp(torch, (64, 256, 256, 10)))
        total = PYTORCH_WAIT + PYTORCH_WARMUP + PYTORCH_ACTIVE
        dataset = _SlowDataset(32 * (total + 1), 64, 0.0)
        loader = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=0)

        def straggle() -> None:
            if rank == 1:  # rank 1's data path is slower: rank 0 waits in the all-reduce
                with torch.profiler.record_function("slow_data_rank1"):
                    time.sleep(PYTORCH_GLOO_STRAGGLER_SLEEP_S)

        dist.barrier()
        with _torch_profile(torch, Path(logdir) / PYTORCH_RUN, f"rank{rank}", steps=True) as prof:
            _torch_train(torch, model, loader, prof, total, step_hook=straggle)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def make_pytorch_gloo_2ranks(logdir: Path) -> None:
    """DDP over gloo on 127.0.0.1, 2 spawned ranks, each profiling into the same run dir."""
    import torch.multiprocessing as mp

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    port = PYTORCH_GLOO_PORT if _port_is_free(PYTORCH_GLOO_PORT) else _free_ports(1)[0]
    os.environ["MASTER_PORT"] = str(port)
    mp.spawn(_pytorch_gloo_rank, args=(2, str(logdir)), nprocs=2, join=True)


def make_pytorch_cpu_nosteps(logdir: Path) -> None:
    """Inference only: a few forward passes under ``no_grad``, no schedule, no ``prof.step()``."""
    torch = _import_torch()
    model = _torch_mlp(torch, (64, 256, 256, 10)).eval()
    x = torch.randn(32, 64)
    with torch.no_grad():
        model(x)  # warm-up outside the capture
        with _torch_profile(torch, logdir / PYTORCH_RUN, "worker0", steps=False):
            for _ in range(3):
                with torch.profiler.record_function("inference"):
                    model(x).argmax(dim=1)


PYTORCH_CAPTURES: dict[str, Callable[[Path], None]] = {
    "pytorch_cpu_train": make_pytorch_cpu_train,
    "pytorch_cpu_gzip": make_pytorch_cpu_gzip,
    "pytorch_gloo_2ranks": make_pytorch_gloo_2ranks,
    "pytorch_cpu_nosteps": make_pytorch_cpu_nosteps,
}


def _load_kineto(path: Path) -> dict[str, Any]:
    import gzip
    import json

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return dict(json.load(fh))


def summarize_pytorch(path: Path) -> dict[str, Any]:
    """Print and return the facts of one ``*.pt.trace.json[.gz]``."""
    doc = _load_kineto(path)
    events = doc.get("traceEvents", [])
    cats = collections.Counter(str(e.get("cat", "")) for e in events)
    names = [str(e.get("name", "")) for e in events]
    steps = sorted({n for n in names if n.startswith("ProfilerStep#")})
    facts = {
        "bytes": path.stat().st_size,
        "events": len(events),
        "steps": steps,
        "dataloader": sum("DataLoader" in n for n in names),
        "memory": names.count("[memory]"),
        "gloo": sum(n.startswith("gloo:") for n in names),
        "distributedInfo": doc.get("distributedInfo"),
    }
    _log(f"{path}: {facts['bytes']:,} bytes, {facts['events']:,} events, steps={steps}, "
         f"DataLoader events={facts['dataloader']}, [memory]={facts['memory']}, "
         f"gloo events={facts['gloo']}, distributedInfo={facts['distributedInfo']}, "
         f"cats={dict(cats.most_common())}")
    return facts


def regenerate_pytorch(out_dir: Path, names: Sequence[str] = PYTORCH_FIXTURES) -> None:
    """Capture every PyTorch fixture in its own child process and check it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        logdir = out_dir / name
        if logdir.exists():
            shutil.rmtree(logdir)
        _log(f"capturing {name} -> {logdir}")
        _run_child(["--_pytorch_child", name, "--out", str(out_dir)])
        files = sorted(logdir.rglob("*.pt.trace.json*"))
        if not files:
            raise RuntimeError(f"{logdir}: no .pt.trace.json was written")
        for path in files:
            facts = summarize_pytorch(path)
            if facts["bytes"] > MAX_PYTORCH_FILE_BYTES:
                raise RuntimeError(f"{path}: {facts['bytes']} bytes is too big for a fixture")
    total = sum(p.stat().st_size for n in PYTORCH_FIXTURES if (out_dir / n).exists()
                for p in (out_dir / n).rglob("*") if p.is_file())
    _log(f"all pytorch fixtures: {total / 1e6:.2f} MB")
    if total > MAX_PYTORCH_TOTAL_BYTES:
        raise RuntimeError(f"pytorch fixtures total {total} bytes, over {MAX_PYTORCH_TOTAL_BYTES}")


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Capture real TensorFlow and JAX profiles as TensorBoard-logdir test fixtures.",
        epilog="See the module docstring for what each fixture contains.",
    )
    parser.add_argument(
        "--only",
        choices=FIXTURES,
        action="append",
        help="regenerate only this fixture (repeatable)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output directory for the fixtures (default: tests/data)",
    )
    parser.add_argument(
        "--large",
        type=Path,
        metavar="OUT_DIR",
        help="write the big benchmark profile (a logdir) into OUT_DIR",
    )
    parser.add_argument(
        "--summarize",
        type=Path,
        metavar="DIR",
        help="only parse and summarize every .xplane.pb under DIR",
    )
    parser.add_argument(
        "--pytorch",
        type=Path,
        nargs="?",
        const=DEFAULT_OUT,
        metavar="OUT",
        help="capture only the PyTorch fixtures (pytorch_*) into OUT (default: tests/data); "
        "run it with a Python that has torch, no TensorFlow needed",
    )
    # Hidden internal modes.
    parser.add_argument(
        "--_pytorch_child", dest="pytorch_child", choices=PYTORCH_FIXTURES,
        help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--_child", dest="child", choices=(*FIXTURES, "large"), help=argparse.SUPPRESS
    )
    parser.add_argument("--_worker", dest="worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--max-seconds", type=float, default=WORKER_MAX_SECONDS, help=argparse.SUPPRESS
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.worker:
        run_worker(args.port, args.worker_index, args.max_seconds)
    elif args.child == "large":
        make_large(args.out)
    elif args.child:
        CAPTURES[args.child](args.out / args.child)
    elif args.pytorch_child:
        PYTORCH_CAPTURES[args.pytorch_child](args.out / args.pytorch_child)
    elif args.pytorch:
        regenerate_pytorch(args.pytorch)
    elif args.summarize:
        total = summarize_tree(args.summarize)
        _log(f"total size of all files under {args.summarize}: {total / 1024:.1f} KiB")
    elif args.large:
        generate_large(args.large)
    else:
        regenerate(args.out, args.only or FIXTURES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
