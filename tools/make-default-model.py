#!/usr/bin/python3
"""Build nnxr's embedded default model and its sample inputs.

Trains a small convolutional classifier on scikit-learn's copy of the UCI
optical handwritten digits (1797 grey 8x8 images), exports it to ONNX and
writes, into the output folder (the repository's assets/ by default):

  digits.onnx      the model: input "digit" float32 [1,1,8,8] in 0..1,
                   output "probabilities" float32 [1,10] (ends in Softmax)
  digit-<k>.png    one correctly classified test image per class k = 0..9,
                   8x8 8-bit greyscale; byte / 255 is the model's input
  README.md        description of the files, with the measured numbers

Everything is seeded, so re-running with the same --seed and the same
package versions reproduces the same files byte for byte.

Needs the Debian packages python3-torch python3-sklearn python3-onnx
python3-pil (and python3-numpy). Usage:

  /usr/bin/python3 tools/make-default-model.py [--out DIR] [--seed N]
"""

import argparse
import io
import os
import random
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.shape_inference
import sklearn
import torch
from PIL import Image
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODEL_FILE = "digits.onnx"
INPUT_NAME = "digit"
OUTPUT_NAME = "probabilities"
MODEL_DOC = "nnxr default model: 8x8 handwritten digit classifier"
GRAPH_NAME = "nnxr_digits"
PRODUCER = "nnxr-tools"
OPSET = 13

EPOCHS = 40
BATCH = 32
LEARNING_RATE = 3e-3
TEST_SIZE = 0.25


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


class DigitNet(torch.nn.Module):
    """[1,1,8,8] -> conv 8 -> conv 16 -> maxpool -> linear 10 -> softmax."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, kernel_size=3, padding=1),   # 8x8x8
            torch.nn.ReLU(),
            torch.nn.Conv2d(8, 16, kernel_size=3, padding=1),  # 16x8x8
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),                             # 16x4x4
            torch.nn.Flatten(),                                # 256
        )
        self.classifier = torch.nn.Linear(16 * 4 * 4, 10)     # 10
        self.softmax = torch.nn.Softmax(dim=1)

    def logits(self, x):
        return self.classifier(self.features(x))

    def forward(self, x):
        return self.softmax(self.logits(x))


def accuracy(model, x, y):
    with torch.no_grad():
        pred = model.logits(x).argmax(dim=1)
    return (pred == y).float().mean().item()


def train(x_train, y_train, seed):
    model = DigitNet()
    opt = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)
    n = x_train.shape[0]
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, BATCH):
            idx = order[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model.logits(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if (epoch + 1) % 10 == 0:
            print(f"epoch {epoch + 1:3d}  loss {total / n:.4f}")
    model.eval()
    return model


def export_onnx(model, test_accuracy):
    """Exports with torch, then adds nnxr's metadata; returns the ModelProto."""
    buf = io.BytesIO()
    dummy = torch.zeros(1, 1, 8, 8, dtype=torch.float32)
    torch.onnx.export(
        model, dummy, buf,
        input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
        opset_version=OPSET, do_constant_folding=True,
        export_params=True)
    m = onnx.load_model_from_string(buf.getvalue())
    m.producer_name = PRODUCER
    m.producer_version = ""
    m.doc_string = MODEL_DOC
    m.graph.name = GRAPH_NAME
    m.graph.doc_string = MODEL_DOC
    del m.metadata_props[:]
    for key, value in metadata(test_accuracy):
        p = m.metadata_props.add()
        p.key, p.value = key, value
    onnx.checker.check_model(m)
    m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    onnx.checker.check_model(m)
    return m


def metadata(test_accuracy):
    return [
        ("nnxr.image.channels", "gray"),
        ("nnxr.image.size", "8x8"),
        ("nnxr.image.scale", repr(1.0 / 255.0)),
        ("nnxr.image.mean", "0"),
        ("nnxr.image.std", "1"),
        ("nnxr.labels", ",".join(str(k) for k in range(10))),
        ("nnxr.test_accuracy", f"{test_accuracy:.4f}"),
    ]


def run_onnx_numpy(m, x):
    """Minimal numpy evaluation of the exported graph (only the ops it uses),
    so the saved file itself is checked without an ONNX runtime."""
    env = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    env[m.graph.input[0].name] = x
    for node in m.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in node.attribute}
        ins = [env[i] for i in node.input if i]
        op = node.op_type
        if op == "Conv":
            w = ins[1]
            b = ins[2] if len(ins) > 2 else np.zeros(w.shape[0], np.float32)
            assert list(a.get("strides", [1, 1])) == [1, 1]
            assert list(a.get("dilations", [1, 1])) == [1, 1]
            assert a.get("group", 1) == 1
            pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
            xp = np.pad(ins[0], ((0, 0), (0, 0), (pt, pb), (pl, pr)))
            kh, kw = w.shape[2:]
            oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
            out = np.zeros((xp.shape[0], w.shape[0], oh, ow), np.float64)
            for i in range(kh):
                for j in range(kw):
                    out += np.einsum("nchw,oc->nohw",
                                     xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
            y = (out + b[None, :, None, None]).astype(np.float32)
        elif op == "Relu":
            y = np.maximum(ins[0], 0)
        elif op == "MaxPool":
            k = list(a["kernel_shape"])
            assert k == [2, 2] and list(a.get("strides", k)) == k
            assert not any(a.get("pads", []))
            n, c, h, w_ = ins[0].shape
            y = ins[0].reshape(n, c, h // 2, 2, w_ // 2, 2).max(axis=(3, 5))
        elif op == "Flatten":
            axis = a.get("axis", 1)
            y = ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
        elif op == "Reshape":
            y = ins[0].reshape(ins[1])
        elif op == "Gemm":
            A, B = ins[0], ins[1]
            if a.get("transA", 0):
                A = A.T
            if a.get("transB", 0):
                B = B.T
            y = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2:
                y = y + a.get("beta", 1.0) * ins[2]
        elif op == "Softmax":
            axis = a.get("axis", -1)
            e = np.exp(ins[0] - ins[0].max(axis=axis, keepdims=True))
            y = e / e.sum(axis=axis, keepdims=True)
        else:
            raise RuntimeError(f"numpy check: unsupported op {op}")
        env[node.output[0]] = y.astype(np.float32)
    return env[m.graph.output[0].name]


def shape_of(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in value_info.type.tensor_type.shape.dim]


def write_samples(model, x_test, y_test, raw_test, out_dir):
    """Most confidently, correctly classified test image of each class."""
    with torch.no_grad():
        prob = model(x_test).numpy()
    pred = prob.argmax(axis=1)
    labels = y_test.numpy()
    chosen = {}
    for k in range(10):
        ok = np.flatnonzero((labels == k) & (pred == k))
        if len(ok) == 0:
            sys.exit(f"error: no correctly classified test image of class {k}")
        chosen[k] = int(ok[np.argmax(prob[ok, k])])
    for k, i in chosen.items():
        # byte = round(value * 255 / 16), halves rounded up
        img = np.floor(raw_test[i].reshape(8, 8) * 255.0 / 16.0 + 0.5)
        Image.fromarray(img.astype(np.uint8), mode="L").save(
            os.path.join(out_dir, f"digit-{k}.png"), optimize=False)
    return chosen


def verify_samples(model, onnx_model, out_dir):
    """Loads every PNG back and checks both the torch model and the exported
    graph classify it as its label, with matching probabilities."""
    for k in range(10):
        path = os.path.join(out_dir, f"digit-{k}.png")
        img = Image.open(path)
        if img.mode != "L" or img.size != (8, 8):
            sys.exit(f"error: {path}: expected 8x8 mode L, got {img.size} {img.mode}")
        x = (np.asarray(img, dtype=np.float32) / 255.0).reshape(1, 1, 8, 8)
        with torch.no_grad():
            p_torch = model(torch.from_numpy(x)).numpy()
        p_onnx = run_onnx_numpy(onnx_model, x)
        if p_onnx.shape != (1, 10):
            sys.exit(f"error: exported graph output shape {p_onnx.shape}")
        if int(p_torch.argmax()) != k or int(p_onnx.argmax()) != k:
            sys.exit(f"error: {path}: torch predicts {int(p_torch.argmax())}, "
                     f"exported graph predicts {int(p_onnx.argmax())}, label {k}")
        if not np.allclose(p_torch, p_onnx, atol=1e-5):
            sys.exit(f"error: {path}: torch and exported graph disagree: "
                     f"{p_torch} vs {p_onnx}")
        print(f"{os.path.basename(path)}: predicted {k} "
              f"(p = {p_torch[0, k]:.4f}, exported graph {p_onnx[0, k]:.4f})")


def write_readme(out_dir, info):
    m = info["onnx"]
    nodes = "\n".join(f"| {i} | `{n.op_type}` | {describe(n)} |"
                      for i, n in enumerate(m.graph.node))
    meta = "\n".join(f"| `{p.key}` | `{p.value}` |" for p in m.metadata_props)
    samples = "\n".join(
        f"| `digit-{k}.png` | {k} | {i} | {info['sample_prob'][k]:.4f} |"
        for k, i in info["samples"].items())
    text = f"""# nnxr assets

Generated by `tools/make-default-model.py`; do not edit by hand (this README
included — the script rewrites it so the numbers always match the files).

## Files

| File | What it is |
|---|---|
| `{MODEL_FILE}` | Default model: a small CNN classifying 8x8 greyscale handwritten digits ({info['size']} bytes, {info['params']} parameters) |
| `digit-0.png` … `digit-9.png` | Sample inputs: one test-split image per class, 8x8 8-bit greyscale PNG |
| `README.md` | This file |

## Model

ONNX, opset {OPSET}, IR version {m.ir_version}, producer `{m.producer_name}`,
graph name `{m.graph.name}`, doc string "{m.doc_string}".

- Input `{INPUT_NAME}`: float32 {shape_of(m.graph.input[0])} (N, C, H, W), pixel values in 0..1
  (0 = background, 1 = full ink). The batch dimension is fixed at 1.
- Output `{OUTPUT_NAME}`: float32 {shape_of(m.graph.output[0])}, class probabilities for the digits
  0..9 (the graph ends in a Softmax, so each row sums to 1).

Architecture (tensor shapes for one image):

| Layer | Output shape |
|---|---|
| input | 1x1x8x8 |
| Conv2d 1→8, 3x3, padding 1, + ReLU | 1x8x8x8 |
| Conv2d 8→16, 3x3, padding 1, + ReLU | 1x16x8x8 |
| MaxPool 2x2, stride 2 | 1x16x4x4 |
| Flatten | 1x256 |
| Linear 256→10 | 1x10 |
| Softmax over classes | 1x10 |

Parameters: 80 + 1168 + 2570 = {info['params']}.

Nodes in the exported graph:

| # | op_type | Details |
|---|---|---|
{nodes}

### Preprocessing and metadata

The model's `metadata_props` tell a viewer how to turn an image into the
input tensor: convert to `channels`, resize to `size` (W x H), multiply each
8-bit value by `scale`, then subtract `mean` and divide by `std`. For these
files that is simply `byte / 255`. `nnxr.labels` names the output classes in
order.

| Key | Value |
|---|---|
{meta}

## Sample images

Each `digit-<k>.png` is the most confidently, correctly classified test-split
image of class k (never seen in training). Pixel bytes are
`round(value * 255 / 16)` of the dataset's 0..16 values (halves rounded up),
so `byte / 255` differs from the training input `value / 16` by at most
0.5/255. The script loads every PNG back and checks that both the PyTorch
model and a plain numpy evaluation of the saved `{MODEL_FILE}` predict its
label.

| File | Label | Test-split index | Probability of label |
|---|---|---|---|
{samples}

## Dataset and training

- Data: scikit-learn's bundled copy of the UCI "Optical Recognition of
  Handwritten Digits" test set (`sklearn.datasets.load_digits()`): {info['n_total']} images,
  8x8, values 0..16, classes 0..9.
- Split: `train_test_split(test_size={TEST_SIZE}, random_state={info['seed']}, stratify=labels)`:
  {info['n_train']} training and {info['n_test']} test images.
- Training: Adam, learning rate {LEARNING_RATE}, batch size {BATCH}, {EPOCHS} epochs,
  cross-entropy on the logits (the Softmax is only part of the exported graph);
  seed {info['seed']}, single thread, `torch.use_deterministic_algorithms(True)`.
- Measured accuracy: train {info['train_acc'] * 100:.2f}%, test {info['test_acc'] * 100:.2f}%.

## Regenerating

Install the Debian 12 packages `python3-torch python3-sklearn python3-onnx
python3-pil` (plus `python3-numpy`), then from the repository root run:

    /usr/bin/python3 tools/make-default-model.py

Options: `--out DIR` (default: this folder), `--seed N` (default 0).
Built with torch {torch.__version__}, scikit-learn {sklearn.__version__}, onnx {onnx.__version__},
numpy {np.__version__}. With the same seed and package versions re-running
reproduces every file byte for byte; other versions may give slightly
different weights.
"""
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)


def describe(node):
    parts = []
    for at in node.attribute:
        v = onnx.helper.get_attribute_value(at)
        if isinstance(v, bytes):
            v = v.decode()
        if isinstance(v, list):
            v = "[" + ",".join(str(e) for e in v) + "]"
        parts.append(f"{at.name}={v}")
    return ", ".join(parts) if parts else "—"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "assets"),
                    help="output folder (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seed_everything(args.seed)

    digits = load_digits()
    raw = digits.data.astype(np.float32)          # (1797, 64), 0..16
    labels = digits.target.astype(np.int64)
    raw_train, raw_test, y_train, y_test = train_test_split(
        raw, labels, test_size=TEST_SIZE, random_state=args.seed, stratify=labels)
    x_train = torch.from_numpy(raw_train / 16.0).reshape(-1, 1, 8, 8)
    x_test = torch.from_numpy(raw_test / 16.0).reshape(-1, 1, 8, 8)
    y_train, y_test = torch.from_numpy(y_train), torch.from_numpy(y_test)
    print(f"dataset: {len(raw)} images, {len(raw_train)} train, {len(raw_test)} test")

    model = train(x_train, y_train, args.seed)
    train_acc = accuracy(model, x_train, y_train)
    test_acc = accuracy(model, x_test, y_test)
    print(f"train accuracy {train_acc * 100:.2f}%  test accuracy {test_acc * 100:.2f}%")
    if test_acc < 0.97:
        print("warning: test accuracy below 97%", file=sys.stderr)

    m = export_onnx(model, test_acc)
    model_path = os.path.join(args.out, MODEL_FILE)
    onnx.save_model(m, model_path)
    size = os.path.getsize(model_path)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {model_path} ({size} bytes, {params} parameters)")
    print("nodes: " + ", ".join(n.op_type for n in m.graph.node))

    samples = write_samples(model, x_test, y_test, raw_test, args.out)
    reloaded = onnx.load(model_path)
    verify_samples(model, reloaded, args.out)
    with torch.no_grad():
        prob = model(x_test).numpy()
    sample_prob = {k: float(prob[i, k]) for k, i in samples.items()}

    write_readme(args.out, dict(
        onnx=reloaded, size=size, params=params, seed=args.seed,
        train_acc=train_acc, test_acc=test_acc, samples=samples,
        sample_prob=sample_prob, n_total=len(raw), n_train=len(raw_train),
        n_test=len(raw_test)))
    print(f"wrote {os.path.join(args.out, 'README.md')}")


if __name__ == "__main__":
    main()
