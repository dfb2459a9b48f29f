"""Real TensorFlow programs for the capture tests (run as subprocesses, never imported by them).

    python tests/integration/tf_training.py server PORT [--max-seconds S]
        starts `tf.profiler.experimental.server.start(PORT)`, prints READY once the train step
        is traced, then trains a small MLP in a loop, each step wrapped in
        `tf.profiler.experimental.Trace("train", step_num=N, _r=1)`, plus a plain Python
        function per step (what the Python tracer records). It stops after S seconds or when
        its parent goes away.

    python tests/integration/tf_training.py idle PORT [--max-seconds S]
        starts the profiler server, prints READY and runs nothing: captures come back empty.

    python tests/integration/tf_training.py keras LOGDIR
        Keras 3 `model.fit` with `tf.keras.callbacks.TensorBoard(LOGDIR, profile_batch=(2, 6))`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _train_step(tf: Any, batch: int) -> tuple[Any, Any, Any]:
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(32,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    x = tf.random.stateless_normal((batch, 32), seed=(1, 2))
    y = tf.random.stateless_uniform((batch,), seed=(3, 4), maxval=10, dtype=tf.int64)
    return step, x, y


def python_side_work(step: int) -> int:
    """A plain Python function: the Python tracer records it as `$...python_side_work`."""
    return sum(i * i for i in range(50 + step % 7))


def serve(port: int, max_seconds: float) -> None:
    import tensorflow as tf

    started = time.monotonic()
    parent = os.getppid()
    tf.profiler.experimental.server.start(port)
    step, x, y = _train_step(tf, 64)
    for _ in range(3):
        step(x, y)
    print("READY", flush=True)
    n = 0
    while time.monotonic() - started < max_seconds and os.getppid() == parent:
        with tf.profiler.experimental.Trace("train", step_num=n, _r=1):
            python_side_work(n)
            step(x, y)
        n += 1
        time.sleep(0.01)  # leave the 2 cores to the tests and TensorBoard


def idle(port: int, max_seconds: float) -> None:
    import tensorflow as tf

    started = time.monotonic()
    parent = os.getppid()
    tf.profiler.experimental.server.start(port)
    print("READY", flush=True)
    while time.monotonic() - started < max_seconds and os.getppid() == parent:
        time.sleep(0.2)


def keras_fit(logdir: str) -> None:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.normal(size=(16 * 32, 32)).astype("float32")
    y = rng.integers(0, 10, size=(16 * 32,))
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(32,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(
        optimizer="sgd",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    callback = tf.keras.callbacks.TensorBoard(log_dir=logdir, profile_batch=(2, 6))
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[callback], verbose=0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    for mode in ("server", "idle"):
        server = modes.add_parser(mode)
        server.add_argument("port", type=int)
        server.add_argument("--max-seconds", type=float, default=240.0)
    keras = modes.add_parser("keras")
    keras.add_argument("logdir")
    args = parser.parse_args(argv)
    if args.mode == "server":
        serve(args.port, args.max_seconds)
    elif args.mode == "idle":
        idle(args.port, args.max_seconds)
    else:
        keras_fit(args.logdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
