#!/usr/bin/python3
"""Layer by layer: the time of each node of a model in `nnxr run --profile` and in onnxruntime's
profiler, side by side.

Usage: bench/compare-layers.py [--nnxr BIN] [--threads N] [--runs N] [--top K] [--ort-runner JS] MODEL

Runs `nnxr run MODEL --random 42 --repeat N --profile --json` and ort-run.js (--seed 42, 3 warm-ups,
N runs, graph optimizations "all") under bench/ort-profile.js, which turns onnxruntime's profiler on.
Both fuse nodes, differently: nnxr runs an activation (Relu, Clip, SiLU's Sigmoid and Mul, an Add)
inside the node before it and reports it at 0 ms; onnxruntime names a fused node by its first
node, or by the output it ends in with an "_nchwc" suffix. So the table compares groups: a node
with the nodes after it that nnxr ran inside it, each side's time (nnxr's: the mean over its runs;
onnxruntime's: the median per node) summed over the same nodes. onnxruntime's own nodes (layout reorders)
are listed apart. For a Conv, Gemm or MatMul group the table gives its Mflop and nnxr's Gflop/s.
Prints the K slowest groups in nnxr (--top, default 30), the totals per kind of group (first
node's op type; a Conv's by kernel size, stride and depthwise), and the time nnxr spends over
1.5 times onnxruntime's, summed over the groups.
"""
import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_compare_ort():
    """bench/compare-ort.py as a module: DIMS, fp16_feeds, AGREE (tools/ort-agree.py)."""
    spec = importlib.util.spec_from_file_location("compare_ort", os.path.join(HERE, "compare-ort.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CMP = load_compare_ort()


def shapes_of(model, dims):
    """Output shapes by tensor name (shape inference with the symbolic input dimensions `dims`,
    NAME=VALUE as ort-run.js's --dim, set; unknown dimensions as 0)."""
    import onnx
    values = dict(d.split("=", 1) for d in dims)
    for i in model.graph.input:
        for d in i.type.tensor_type.shape.dim:
            if d.dim_param in values:
                d.dim_value = int(values[d.dim_param])
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # (a model the checker rejects still has the shapes it declares)
        pass
    g = model.graph
    return {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in list(g.value_info) + list(g.output) + list(g.input)}


def node_name(node, index):
    """A node's name, or for an unnamed one the name nnxr gives it (model/load.cpp): OpType_index."""
    return node.name or f"{node.op_type}_{index}"


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else a.i
    return default


def flops_and_kind(node, shapes, inits):
    """(Mflop, kind) of a group's first node: Conv by kernel, stride and depthwise; Gemm and MatMul."""
    out = shapes.get(node.output[0], [])
    if node.op_type == "Conv" and len(node.input) > 1 and node.input[1] in inits:
        w = inits[node.input[1]]
        group = attr(node, "group", 1)
        strides = attr(node, "strides", [1])
        kind = ("depthwise " if group > 1 and group == w[0] else "") + "x".join(str(k) for k in w[2:]) + (f" s{strides[0]}" if max(strides) > 1 else "")
        return 2 * math.prod(w) * math.prod(out[2:]) * (out[0] if out else 1) / 1e6, "Conv " + kind
    if node.op_type in ("Gemm", "MatMul"):
        a, b = shapes.get(node.input[0], []), shapes.get(node.input[1], inits.get(node.input[1], []))
        if a and b and out:
            k = a[-1] if node.op_type == "MatMul" or not attr(node, "transA", 0) else a[0]
            return 2 * math.prod(out) * k / 1e6, node.op_type
    return 0.0, node.op_type


def groups_of(graph, nnxr_ms):
    """Node index -> group (index of its first node): a node nnxr reported at 0 ms whose inputs come
    from one group only (and initializers and Constant nodes) joins it; any other node starts its own."""
    producer, group = {}, {}
    for i, n in enumerate(graph.node):
        srcs = {group[producer[x]] for x in n.input if x in producer and graph.node[producer[x]].op_type != "Constant"}
        group[i] = srcs.pop() if nnxr_ms.get(node_name(n, i), 0.0) == 0.0 and len(srcs) == 1 else i
        for o in n.output:
            producer[o] = i
    return group


def match_ort(graph, ort_rows):
    """(node index -> onnxruntime us, onnxruntime's own rows): a row is a node's when its name is the
    node's name, or an output's with "_nchwc" (then the first node of the chain it ends), or starts
    with the node's name and "/"."""
    by_name, by_output = {}, {}
    for i, n in enumerate(graph.node):
        by_name[node_name(n, i)] = i
        for o in n.output:
            by_output[o] = i
    names = sorted(by_name, key=len, reverse=True)
    per_node, own = {}, []
    for r in ort_rows:
        i = None
        # (float16 models: onnxruntime computes in float, its nodes between casts prefixed thus)
        for name in (r["node"], r["node"].removeprefix("InsertedPrecisionFreeCast_")):
            i = by_name.get(name)
            if i is None and name.endswith("_nchwc"):
                # The output the fused chain ends in (a Conv + Add + Relu is named by the Relu's):
                # back along first inputs to the chain's first node, of the row's op type.
                i = j = by_output.get(name[: -len("_nchwc")])
                for _ in range(4):
                    if j is None or graph.node[j].op_type == r["op"] or not graph.node[j].input:
                        break
                    j = by_output.get(graph.node[j].input[0])
                if j is not None and graph.node[j].op_type == r["op"]:
                    i = j
            if i is None:
                i = next((by_name[n] for n in names if n and name.startswith(n + "/")), None)
            if i is not None:
                break
        if i is None:
            own.append(r)
        else:
            per_node[i] = per_node.get(i, 0.0) + r["us"]
    return per_node, own


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--nnxr", default=os.path.join(os.path.dirname(HERE), "build", "app", "nnxr"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--ort-runner", default=os.path.join(CMP.SHARED, "tools", "ort-run.js"))
    args = ap.parse_args()
    for need, what in ((args.model, "model"), (args.nnxr, "nnxr binary"), (args.ort_runner, "ort-run.js"),
                       (os.path.join(CMP.AGREE.default_node_path(), "onnxruntime-node"), "onnxruntime-node (run tools/setup.sh)")):
        if not os.path.exists(need):
            print(f"compare-layers: {need}: {what} not found", file=sys.stderr)
            return 2
    if args.runs < 1 or args.threads < 1:
        print("compare-layers: --runs and --threads must be 1 or more", file=sys.stderr)
        return 2
    import onnx
    try:
        model = onnx.load(args.model)
    except Exception as e:
        print(f"compare-layers: {args.model}: not a readable ONNX model ({str(e)[:120]})", file=sys.stderr)
        return 2
    env = dict(os.environ, NODE_PATH=CMP.AGREE.default_node_path())
    symbolic = CMP.DIMS.get(os.path.basename(args.model), [])
    dims = [x for d in symbolic for x in ("--dim", d)]
    feeds = CMP.fp16_feeds(args.model, args.ort_runner, env, dims)
    t = str(args.threads)
    p = subprocess.run([args.nnxr, "run", args.model, "--random", "42", "--threads", t, "--repeat", str(args.runs), "--profile", "--json"] + dims + feeds,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(f"compare-layers: nnxr run failed: {p.stderr.strip()[-300:]}", file=sys.stderr)
        return 1
    nn = json.loads(p.stdout)
    nnxr_ms = {r["node"]: r["ms"] for r in nn["profile"]}
    with tempfile.TemporaryDirectory(prefix="nnxr-layers-") as tmp:
        out = os.path.join(tmp, "ort.json")
        p = subprocess.run(["node", os.path.join(HERE, "ort-profile.js"), out, args.ort_runner, args.model, "--seed", "42", "--threads", t, "--warmup", "3",
                            "--runs", str(args.runs), "--quiet", "--json"] + dims, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0 or not os.path.exists(out):
            print(f"compare-layers: onnxruntime failed: {p.stderr.strip()[-300:]}", file=sys.stderr)
            return 1
        with open(out) as f:
            ort_rows = json.load(f)
    g = model.graph
    shapes = shapes_of(model, symbolic)
    inits = {i.name: list(i.dims) for i in g.initializer}
    group = groups_of(g, nnxr_ms)
    ort_us, own = match_ort(g, ort_rows)
    rows = {}
    for i, n in enumerate(g.node):
        head = group[i]
        r = rows.setdefault(head, {"ops": [], "nnxr": 0.0, "ort": 0.0})
        r["ops"].append(n.op_type)
        r["nnxr"] += nnxr_ms.get(node_name(n, i), 0.0)
        r["ort"] += ort_us.get(i, 0.0) / 1000
    print(f"{os.path.basename(args.model)}, {args.threads} thread{'s' if args.threads > 1 else ''}, {args.runs} runs; nnxr kernels: {nn.get('isa', '?')}\n")
    print("| node | ops | output | Mflop | nnxr ms | ORT ms | ratio | nnxr Gflop/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    kinds, excess = {}, 0.0
    for shown, (head, r) in enumerate(sorted(rows.items(), key=lambda kv: -kv[1]["nnxr"])):
        node = g.node[head]
        mflop, kind = flops_and_kind(node, shapes, inits)
        k = kinds.setdefault(kind, [0, 0.0, 0.0, 0.0])
        k[0] += 1
        k[1] += r["nnxr"]
        k[2] += r["ort"]
        k[3] += mflop
        excess += max(0.0, r["nnxr"] - 1.5 * r["ort"])
        if shown < args.top:
            shape = "x".join(str(d) for d in shapes.get(node.output[0], []))
            ratio = f"{r['nnxr'] / r['ort']:.2f}" if r["ort"] > 0 else "-"
            rate = f"{mflop / r['nnxr']:.1f}" if mflop and r["nnxr"] > 0 else ""
            print(f"| {node_name(node, head)[:60]} | {'+'.join(r['ops'])} | {shape} | {mflop:.1f} | {r['nnxr']:.3f} | {r['ort']:.3f} | {ratio} | {rate} |")
    own_ms = sum(r["us"] for r in own) / 1000
    total_n, total_o = sum(r["nnxr"] for r in rows.values()), sum(r["ort"] for r in rows.values()) + own_ms
    print("\n| kind (first op) | groups | nnxr ms | ORT ms | ratio | Mflop |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, (count, a, b, mflop) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"| {kind} | {count} | {a:.3f} | {b:.3f} | {a / b:.2f} | {mflop:.1f} |" if b > 0 else f"| {kind} | {count} | {a:.3f} | {b:.3f} | - | {mflop:.1f} |")
    if own:
        print(f"| onnxruntime's own ({', '.join(sorted({r['op'] for r in own}))}) | {len(own)} | | {own_ms:.3f} | | |")
    print(f"\nsum of nodes: nnxr {total_n:.3f} ms, onnxruntime {total_o:.3f} ms (ratio {total_n / total_o:.2f}); "
          f"nnxr's time over 1.5x onnxruntime's, summed over groups: {excess:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
