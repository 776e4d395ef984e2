#!/usr/bin/env python3
"""Keras 3's side of bench/peers/run.sh, on the TensorFlow backend (XLA,
jit_compile=True) or the JAX backend (XLA through jax.jit), chosen by
--backend before Keras is imported.

  --model resnet50|mobilenet_v2|efficientnet_b0: keras.applications' model
      (random weights, 1000 classes, NHWC, logits), synthetic data, the
      timed steps after the warm-up steps; prints one JSON line.
  --model resnet20-fmnist: the ResNet-20 of models/fmnist_resnet20.mlir
      trained one or more epochs on the Debian Fashion-MNIST files with the
      recipe of bench/fmnist (batch 128, warmup + cosine, pad-crop + flip
      on whole numpy batches); prints one JSON line per epoch.

Both train with SGD, Nesterov momentum 0.9, softmax cross-entropy on logits.
Keras's weight_decay is decoupled (w -= lr * wd * w, as an extra term of
the update), where Kiln and torch add wd * w to the gradient: the same work
per step. bf16 is Keras's "mixed_bfloat16" policy (bf16 compute, f32
variables), as PyTorch's autocast. The first call of the training function
traces and compiles it; its time beyond a steady step is compile_sec."""

import argparse
import json
import math
import os
import resource
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=["tensorflow", "jax"], required=True)
    p.add_argument("--model", default="resnet50",
                   choices=["resnet50", "mobilenet_v2", "efficientnet_b0", "resnet20-fmnist"])
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--batch", type=int, help="default 32, resnet20-fmnist the recipe's 128")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2, help="untimed steps, the compiling one included")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--epochs", type=int, default=1, help="resnet20-fmnist only")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--round", type=int, default=1, help="the caller's round, echoed")
    p.add_argument("--no-jit", action="store_true",
                   help="TensorFlow backend only: jit_compile=False (TensorFlow's own "
                        "oneDNN kernels in a tf.function graph instead of XLA)")
    args = p.parse_args()
    if args.no_jit and args.backend != "tensorflow":
        p.error("--no-jit is for the TensorFlow backend (JAX always compiles with XLA)")
    return args


def configure(args):
    """Backend and threads, before TensorFlow or JAX is imported."""
    os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.backend == "tensorflow":
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras
    if args.precision == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    return keras


def resnet20(keras):
    """models/fmnist_resnet20.mlir in Keras: basic blocks [3, 3, 3], widths
    16/32/64, projection shortcuts, batch norm momentum 0.1 in torch's terms."""
    layers = keras.layers

    def conv(x, width, kernel, stride):
        return layers.Conv2D(width, kernel, stride, padding="same", use_bias=False)(x)

    def bn(x):
        return layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(x)

    inputs = keras.Input((28, 28, 1))
    x = layers.ReLU()(bn(conv(inputs, 16, 3, 1)))
    cin = 16
    for i, width in enumerate([16, 32, 64]):
        for j in range(3):
            stride = 2 if i > 0 and j == 0 else 1
            y = layers.ReLU()(bn(conv(x, width, 3, stride)))
            y = bn(conv(y, width, 3, 1))
            shortcut = x if stride == 1 and cin == width else bn(conv(x, width, 1, stride))
            x = layers.ReLU()(layers.Add()([y, shortcut]))
            cin = width
    x = layers.GlobalAveragePooling2D()(x)
    # The logits stay f32 under mixed precision, as Kiln's loss does.
    outputs = layers.Dense(10, dtype="float32")(x)
    return keras.Model(inputs, outputs)


def application(keras, name, image_size):
    build = {"resnet50": keras.applications.ResNet50,
             "mobilenet_v2": keras.applications.MobileNetV2,
             "efficientnet_b0": keras.applications.EfficientNetB0}[name]
    return build(weights=None, input_shape=(image_size, image_size, 3), classes=1000,
                 classifier_activation=None)


def compile_model(keras, model, args, learning_rate, weight_decay):
    optimizer = keras.optimizers.SGD(learning_rate=learning_rate, momentum=0.9, nesterov=True,
                                     weight_decay=weight_decay)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=not args.no_jit)


def versions(keras, args):
    """Versions and the configuration that shapes the compiled step."""
    row = {"keras": keras.__version__, "xla": not args.no_jit,
           "xla_flags": os.environ.get("XLA_FLAGS", ""),
           "ld_preload": os.path.basename(os.environ.get("LD_PRELOAD", ""))}
    if args.backend == "tensorflow":
        import tensorflow as tf
        return {**row, "tensorflow": tf.__version__}
    import jax
    return {**row, "jax": jax.__version__}


def system_name(args):
    if args.backend == "jax":
        return "keras-jax"
    return "keras-tf" if args.no_jit else "keras-tf-xla"


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthetic_steps(keras, args):
    import numpy as np
    args.batch = args.batch or 32
    model = application(keras, args.model, args.image_size)
    compile_model(keras, model, args, 0.01, 1e-4)
    rng = np.random.default_rng(0)
    images = rng.standard_normal((args.batch, args.image_size, args.image_size, 3), np.float32)
    labels = rng.integers(0, 1000, args.batch)
    start = time.perf_counter()
    model.train_on_batch(images, labels)
    first_step_sec = time.perf_counter() - start
    for _ in range(args.warmup - 1):
        model.train_on_batch(images, labels)
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = model.train_on_batch(images, labels)
    seconds = (time.perf_counter() - start) / args.steps
    if not math.isfinite(float(loss)):
        sys.exit(f"keras_step.py: {args.model} {args.backend}: loss {loss} after the timed steps")
    print(json.dumps({
        "system": system_name(args), "model": args.model, "precision": args.precision,
        "batch": args.batch, "threads": args.threads, "image_size": args.image_size,
        "images_per_sec": args.batch / seconds, "first_step_sec": first_step_sec,
        "compile_sec": first_step_sec - seconds, "peak_rss_mib": peak_rss_mib(),
        "round": args.round, **versions(keras, args)}))


def fmnist_epochs(keras, args):
    import numpy as np
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fmnist"))
    from fmnist_data import MEAN, STD, augment_nhwc, load_idx

    batch = args.batch or 128
    raw_x = load_idx(os.path.join(args.data, "train-images-idx3-ubyte.gz"))
    train_y = load_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz")).astype(np.int32)
    train_x = (raw_x.astype(np.float32) / 255.0 - MEAN) / STD
    steps_per_epoch = len(train_x) // batch
    total = 3 * steps_per_epoch
    ops = keras.ops

    class WarmupCosine(keras.optimizers.schedules.LearningRateSchedule):
        """fmnist_data.lr_at in keras.ops, evaluated inside the compiled step."""

        def __call__(self, step):
            step = ops.cast(step, "float32")
            warm = 0.1 * step / steps_per_epoch
            t = ops.minimum((step - steps_per_epoch) / (total - steps_per_epoch), 1.0)
            return ops.where(step < steps_per_epoch, warm, 0.05 * (1 + ops.cos(math.pi * t)))

    model = resnet20(keras)
    compile_model(keras, model, args, WarmupCosine(), 5e-4)
    rng = np.random.default_rng(0)
    # One untimed step compiles the training function; the schedule's
    # learning rate at step 0 is 0, so it leaves the weights as they were.
    start = time.perf_counter()
    model.train_on_batch(augment_nhwc(train_x[:batch], rng), train_y[:batch])
    compile_sec = time.perf_counter() - start
    for epoch in range(args.epochs):
        start = time.perf_counter()
        order = rng.permutation(len(train_x))
        for i in range(steps_per_epoch):
            idx = order[i * batch:(i + 1) * batch]
            loss = model.train_on_batch(augment_nhwc(train_x[idx], rng), train_y[idx])
        seconds = time.perf_counter() - start
        if not math.isfinite(float(loss)):
            sys.exit(f"keras_step.py: resnet20-fmnist {args.backend}: loss {loss} in epoch {epoch + 1}")
        print(json.dumps({
            "system": system_name(args), "model": "resnet20-fmnist",
            "precision": args.precision, "batch": batch, "threads": args.threads,
            "epoch": epoch + 1, "epoch_sec": seconds,
            "images_per_sec": steps_per_epoch * batch / seconds, "loss": float(loss),
            "compile_sec": compile_sec, "peak_rss_mib": peak_rss_mib(), "round": args.round,
            **versions(keras, args)}), flush=True)


def main():
    args = parse_args()
    keras = configure(args)
    if args.model == "resnet20-fmnist":
        fmnist_epochs(keras, args)
    else:
        synthetic_steps(keras, args)


if __name__ == "__main__":
    main()
