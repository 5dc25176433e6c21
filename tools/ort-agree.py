#!/usr/bin/python3
"""Agreement of `nnxr run` with onnxruntime on every tensor of a model.

Usage: tools/ort-agree.py [options] MODEL.onnx|FOLDER...

For each model: every node output is made a graph output, onnxruntime runs it on the seeded
random inputs of ort-run.js (--seed 42) and dumps every tensor; `nnxr run --random 42 --dump`
runs the original model on the same inputs. Every tensor both produced is compared:
  float tensors: relative L2 error ||nnxr - ort|| / max(||ort||, 1e-30) <= --tolerance (1e-4;
                 float16 tensors --tolerance-f16, 5e-3), NaN in the same places counting as equal;
  integer/bool tensors: exactly equal.
A float tensor over the tolerance passes only when onnxruntime is shown to be the less exact:
for ops with a simple exact form (Sigmoid, Tanh, Exp, Dropout, InstanceNormalization) the
node is recomputed in float64 from onnxruntime's inputs, and nnxr must be within the tolerance
of that result and closer to it than onnxruntime. Tensors downstream of such a tensor may then
differ by as much as the error they inherit, not more. Every such case is printed.
One summary line per model; exit status 0 when every model agrees, 1 when some tensor
disagrees or a run failed, 2 when onnxruntime-node or the reference runner is missing,
77 when no model was found (the shared folder is absent).

An operator nnxr does not support is reported; the tensors computed before it are compared.

Needs /usr/bin/python3 with numpy and onnx (python3-numpy, python3-onnx), node, and
onnxruntime-node 1.30.0 (tools/setup.sh installs it into ${XDG_CACHE_HOME:-~/.cache}/nnxr/ort).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SKIP = 77

# Inputs the shared models need beyond ort-run.js's defaults (symbolic dims are 1 otherwise).
MODEL_ARGS = {
    "face_detection_yunet.onnx": {"dims": ["height=320", "width=320"]},
}


def fail_setup(msg):
    print("ort-agree: " + msg, file=sys.stderr)
    sys.exit(2)


def default_node_path():
    if os.environ.get("NODE_PATH"):
        return os.environ["NODE_PATH"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "nnxr", "ort", "node_modules")


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def expose(src, dst):
    """Writes a copy of src whose graph outputs are every node output (Constant nodes excepted)."""
    import onnx
    from onnx import helper, shape_inference

    m = onnx.load(src)
    try:
        inferred = shape_inference.infer_shapes(m, strict_mode=False)
    except Exception:  # shape inference is only used for element types
        inferred = m
    known = {v.name: v for v in inferred.graph.value_info}
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        if n.op_type == "Constant":
            continue
        for o in n.output:
            if not o or o in have:
                continue
            if o in known:
                vi = onnx.ValueInfoProto()
                vi.CopyFrom(known[o])
                vi.type.tensor_type.ClearField("shape")  # shapes may be pinned to other dims
                m.graph.output.append(vi)
            else:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
            have.add(o)
    onnx.save(m, dst)
    return m


def rel_l2(a, b):
    a = a.astype(np.float64, copy=False)
    b = b.astype(np.float64, copy=False)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if nan_a.any() or nan_b.any():
        if not np.array_equal(nan_a, nan_b):
            return float("inf")
        keep = ~nan_a
        a, b = a[keep], b[keep]
    diff = a - b
    if not np.all(np.isfinite(diff)):  # infinities: equal only where both are the same infinity
        same = (a == b)
        if not np.all(same | np.isfinite(diff)):
            return float("inf")
        diff = np.where(same, 0.0, diff)
        b = np.where(np.isfinite(b), b, 0.0)
    return float(np.linalg.norm(diff) / max(float(np.linalg.norm(b)), 1e-30))


def arbiter(node, inputs, initializers):
    """float64 result of `node` (output 0, or the Dropout mask) from float64 inputs, for the ops
    whose exact result is simple to state; None for other ops or when an input is unavailable."""
    def arg(i):
        if i >= len(node.input) or not node.input[i]:
            return None
        name = node.input[i]
        v = inputs(name)
        if v is None and name in initializers:
            v = initializers[name]
        return None if v is None else v.astype(np.float64)

    op = node.op_type
    x = arg(0)
    if x is None:
        return None
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if op == "Sigmoid":
            return {0: 1.0 / (1.0 + np.exp(-x))}
        if op == "Tanh":
            return {0: np.tanh(x)}
        if op == "Exp":
            return {0: np.exp(x)}
        if op == "Dropout":  # inference: identity, mask all true
            return {0: x, 1: np.ones_like(x)}
        if op == "InstanceNormalization":
            scale, bias = arg(1), arg(2)
            if scale is None or bias is None:
                return None
            eps = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
            axes = tuple(range(2, x.ndim))
            shape = (1, -1) + (1,) * (x.ndim - 2)
            mean = x.mean(axis=axes, keepdims=True)
            var = x.var(axis=axes, keepdims=True)
            return {0: (x - mean) / np.sqrt(var + eps) * scale.reshape(shape) + bias.reshape(shape)}
    return None


def run(cmd, env=None, timeout=900):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def check_model(model, args, work):
    base = os.path.basename(model)
    extra = MODEL_ARGS.get(base, {})
    dims = extra.get("dims", [])
    tag = f"ort-agree: {base}:"
    exposed = os.path.join(work, "exposed.onnx")
    ort_dir = os.path.join(work, "ort")
    inputs_dir = os.path.join(work, "inputs")
    nnxr_dir = os.path.join(work, "nnxr")
    try:
        m = expose(model, exposed)
    except Exception as e:  # a model onnx cannot load
        print(f"{tag} FAIL cannot expose its tensors: {e}")
        return False

    env = dict(os.environ, NODE_PATH=args.node_path)
    cmd = ["node", args.ort_runner, exposed, "--seed", str(args.seed), "--warmup", "0", "--runs", "1",
           "--threads", "1", "--dump", ort_dir, "--save-inputs", inputs_dir, "--quiet"]
    for d in dims:
        cmd += ["--dim", d]
    p, ort_s = run(cmd, env=env)
    if p.returncode != 0:
        print(f"{tag} FAIL onnxruntime failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
        return False

    # nnxr makes the same seeded inputs itself; float16 ones it cannot make are fed from files.
    from onnx import TensorProto, numpy_helper
    cmd = [args.nnxr, "run", model, "--random", str(args.seed), "--dump", nnxr_dir]
    inits = {i.name for i in m.graph.initializer}
    for gi in m.graph.input:
        if gi.name not in inits and gi.type.tensor_type.elem_type == TensorProto.FLOAT16:
            cmd += ["--input", f"{gi.name}={os.path.join(inputs_dir, safe_name(gi.name) + '.npy')}"]
    for d in dims:
        cmd += ["--dim", d]
    p, nnxr_s = run(cmd)
    unsupported = ""
    if p.returncode != 0:
        msg = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit status {p.returncode}"
        found = re.search(r"unsupported ops: (.*)$", msg)
        if not found or not os.path.exists(os.path.join(nnxr_dir, "index.json")):
            print(f"{tag} FAIL nnxr run failed: {msg}")
            return False
        unsupported = found.group(1)

    with open(os.path.join(nnxr_dir, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    ort_files = {os.path.splitext(fn)[0] for fn in os.listdir(ort_dir) if fn.endswith(".npy")}
    initializers = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    producer = {}
    for n in m.graph.node:
        for k, o in enumerate(n.output):
            if o:
                producer[o] = (n, k)

    def ort_value(name):
        for d in (ort_dir, inputs_dir):
            f = os.path.join(d, safe_name(name) + ".npy")
            if os.path.exists(f):
                return np.load(f)
        return None

    # inherited[t]: relative error that tensor t may carry from an upstream onnxruntime
    # imprecision (0 when none); a downstream tensor is allowed that much, not more.
    inherited = {}
    floats = ints = 0
    float_elems = 0
    worst = (-1.0, "")
    failures, deviations = [], []
    relaxed = 0
    seen = set()
    for e in index:
        key = safe_name(e["name"])
        node, out_k = producer.get(e["name"], (None, 0))
        upstream = max((inherited.get(i, 0.0) for i in (node.input if node else []) if i), default=0.0)
        inherited[e["name"]] = upstream
        if key not in ort_files:
            continue
        seen.add(key)
        a = np.load(os.path.join(nnxr_dir, e["file"]))
        b = np.load(os.path.join(ort_dir, key + ".npy"))
        label = f"'{e['name']}' (node '{e['node']}')"
        if a.shape != b.shape:
            failures.append(f"{label}: shape {list(a.shape)} but onnxruntime {list(b.shape)}")
            continue
        if a.dtype.kind != "f" and b.dtype.kind != "f":
            ints += 1
            if not np.array_equal(a, b):
                n = int(np.count_nonzero(a != b))
                failures.append(f"{label}: {n} of {a.size} integer elements differ")
            continue
        floats += 1
        float_elems += a.size
        err = rel_l2(a, b)
        tol = args.tolerance_f16 if np.float16 in (a.dtype, b.dtype) else args.tolerance
        if err <= tol:
            if err > worst[0]:
                worst = (err, label)
            continue
        if err <= upstream:
            relaxed += 1
            continue
        ref = arbiter(node, ort_value, initializers) if node is not None else None
        if ref is not None and out_k in ref:
            mine, theirs = rel_l2(a, ref[out_k]), rel_l2(b, ref[out_k])
            if mine <= tol and mine < theirs:
                deviations.append(f"{label}: onnxruntime is off the float64 result by {theirs:.3g}, nnxr by {mine:.3g}")
                inherited[e["name"]] = max(upstream, err)
                continue
            failures.append(f"{label}: relative L2 error {err:.3g} > {tol:g} "
                            f"(float64 result: nnxr off by {mine:.3g}, onnxruntime by {theirs:.3g})")
            continue
        failures.append(f"{label}: relative L2 error {err:.3g} > {tol:g}")
    missing = len(ort_files - seen)
    summary = (f"{tag} {floats} float tensors ({float_elems:,} elements) and {ints} integer tensors compared"
               f"; worst agreeing {worst[1] or '-'} relative L2 {max(worst[0], 0):.3g}")
    if deviations:
        summary += (f"; {len(deviations)} where onnxruntime is the less exact (checked in float64)"
                    f" and {relaxed} downstream of them within the error they carry")
    if missing:
        summary += f"; {missing} tensors not computed by nnxr"
    if unsupported:
        summary += f" (unsupported ops: {unsupported})"
    summary += f"; onnxruntime {ort_s:.1f} s, nnxr {nnxr_s:.1f} s"
    if missing and not unsupported:
        failures.append(f"{missing} tensors that onnxruntime computed are missing from nnxr's dump")
    if floats + ints == 0:
        failures.append("no tensor was compared")
    print(summary + (" -- FAIL" if failures else " -- ok"))
    for d in deviations:
        print("  onnxruntime less exact: " + d)
    for f in failures[:20]:
        print("  " + f)
    if len(failures) > 20:
        print(f"  ... and {len(failures) - 20} more")
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="ONNX files or folders of them (not recursive)")
    ap.add_argument("--nnxr", default=os.path.join(ROOT, "build", "app", "nnxr"), help="the nnxr binary")
    ap.add_argument("--ort-runner", help="ort-run.js (default: ../tools/ort-run.js beside the models' folder)")
    ap.add_argument("--node-path", default=default_node_path(), help="folder holding onnxruntime-node")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--tolerance-f16", type=float, default=5e-3,
                    help="for float16 tensors (one rounding to half precision is up to 4.9e-4 alone)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--work", help="keep the exposed models and dumps in this folder (default: a temporary one)")
    args = ap.parse_args()

    models = []
    for m in args.models:
        if os.path.isdir(m):
            models += sorted(os.path.join(m, f) for f in os.listdir(m) if f.endswith(".onnx"))
        elif os.path.exists(m):
            models.append(m)
    if not models:
        print(f"ort-agree: skipped: no models in {' '.join(args.models)} (the shared models folder is absent)")
        return SKIP

    if not os.access(args.nnxr, os.X_OK):
        fail_setup(f"{args.nnxr}: nnxr binary not found (build it, or pass --nnxr)")
    if not args.ort_runner:
        args.ort_runner = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(models[0]))), "tools", "ort-run.js")
        if not os.path.exists(args.ort_runner):  # models in a sub-folder such as models/arch
            args.ort_runner = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(models[0])))),
                                           "tools", "ort-run.js")
    if not os.path.exists(args.ort_runner):
        fail_setup(f"{args.ort_runner}: reference runner ort-run.js not found (pass --ort-runner)")
    if shutil.which("node") is None:
        fail_setup("node is not installed; run tools/setup.sh")
    if not os.path.exists(os.path.join(args.node_path, "onnxruntime-node", "package.json")):
        fail_setup(f"onnxruntime-node is not installed in {args.node_path}; run tools/setup.sh (or set NODE_PATH)")

    ok = True
    for model in models:
        if args.work:
            work = os.path.join(args.work, os.path.splitext(os.path.basename(model))[0])
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            ok &= check_model(model, args, work)
        else:
            with tempfile.TemporaryDirectory(prefix="nnxr-ort-agree-") as work:
                ok &= check_model(model, args, work)
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
