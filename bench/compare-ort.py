#!/usr/bin/python3
"""Side-by-side latency and memory of `nnxr run` and onnxruntime on the shared models.

Usage: bench/compare-ort.py [--nnxr BIN] [--runs N] [--rounds R] [--threads 1,2] [--ort-runner JS] [--ort-keep-all] [--cpu] [MODEL...]

For each model and thread count, in the same invocation: `nnxr run --random 42 --repeat N` and
ort-run.js (--seed 42, 3 warm-ups, N timed runs, graph optimizations "all"), each under
/usr/bin/time -v, alternating in R rounds (--rounds, default 3) so that both meet the same
machine: a burst of load from elsewhere lands in one round, not on one side. Prints one markdown
table per thread count: the median over rounds of each round's median latency, the min over all
runs, the ratio of those medians (nnxr / onnxruntime) and the range of the per-round ratios, and
the peak resident memory (max RSS) of each process.
nnxr keeps every activation of the model; onnxruntime keeps only the outputs. With --ort-keep-all,
onnxruntime also runs a copy of each model whose every node output is a graph output (as
tools/ort-agree.py makes it), so that it keeps every tensor too: two more columns give that
latency and nnxr's ratio to it. onnxruntime's RSS includes the Node.js runtime (about 50 MB).
With --cpu, the tables give CPU time per inference instead of wall-clock latency: each side's
user + system time for N runs less that of a process that loads the model and runs once, over
N. On a machine shared with other work the wall clock counts the time a process waits for a core;
CPU time does not, so at one thread it is the steadier measure of the kernels (at two threads it
sums both threads, spinning included, and is not a latency).
Models default to every .onnx in the shared folder and its arch/ sub-folder. onnxruntime-node is
found, inputs are named and models exposed by tools/ort-agree.py's own functions.
"""
import argparse
import atexit
import importlib.util
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
DIMS = {"face_detection_yunet.onnx": ["height=320", "width=320"]}


def load_ort_agree():
    """tools/ort-agree.py as a module: where onnxruntime-node is, safe file names, expose()."""
    spec = importlib.util.spec_from_file_location("ort_agree", os.path.join(ROOT, "tools", "ort-agree.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AGREE = load_ort_agree()


def timed(cmd, env=None, cpu=False):
    """(stdout, max RSS in MB) of cmd run under /usr/bin/time -v, and its user + system seconds
    when cpu; raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}...: exit {p.returncode}: {p.stderr.strip().splitlines()[-3:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    mb = int(rss.group(1)) / 1024 if rss else float("nan")
    if not cpu:
        return p.stdout, mb
    # (getrusage of the waited-for children: microseconds, where time -v prints hundredths)
    return p.stdout, mb, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fp16_feeds(model, runner, env, dims):
    """--input options for float16 graph inputs (nnxr --random makes float32/integer ones only):
    the same seeded values, saved by ort-run.js into a temporary folder."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits and i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16]
    if not names:
        return []
    folder = tempfile.mkdtemp(prefix="nnxr-bench-inputs-")
    atexit.register(shutil.rmtree, folder, True)
    subprocess.run(["node", runner, model, "--seed", "42", "--warmup", "0", "--runs", "1", "--save-inputs", folder, "--quiet"] + dims,
                   env=env, check=True, stdout=subprocess.DEVNULL)
    out = []
    for n in names:
        out += ["--input", f"{n}={os.path.join(folder, AGREE.safe_name(n) + '.npy')}"]
    return out


def expose(model):
    """A temporary copy of model whose every node output is a graph output (tools/ort-agree.py)."""
    folder = tempfile.mkdtemp(prefix="nnxr-bench-exposed-")
    atexit.register(shutil.rmtree, folder, True)
    out = os.path.join(folder, os.path.basename(model))
    AGREE.expose(model, out)
    return out


def ort_latency(runner, model, threads, runs, dims, env):
    """(median ms, min ms, max RSS MB) of ort-run.js on model."""
    out, rss = timed(["node", runner, model, "--seed", "42", "--threads", str(threads), "--warmup", "3", "--runs", str(runs), "--json", "--quiet"]
                     + dims, env=env)
    o = json.loads(out.strip().splitlines()[-1])
    return o["medianMs"], o["minMs"], rss


def cpu_per_run(nnxr, runner, model, threads, runs, dims, feeds, env):
    """(nnxr CPU ms, onnxruntime CPU ms) per inference: N runs' CPU time less one run's, over N. N is
    at least `runs`, more for a fast model: enough for about 1.5 s of runs (CPU time is counted in
    ticks, and the start-up's own varies by milliseconds)."""
    out, _ = timed([nnxr, "run", model, "--random", "42", "--threads", str(threads), "--repeat", "3", "--json"] + dims + feeds)
    runs = min(20000, max(runs, int(1500 / max(json.loads(out)["median_ms"], 0.01))))
    def nnxr_cpu(repeat):
        return timed([nnxr, "run", model, "--random", "42", "--threads", str(threads), "--repeat", str(repeat), "--json"] + dims + feeds, cpu=True)[2]

    def ort_cpu(n):
        return timed(["node", runner, model, "--seed", "42", "--threads", str(threads), "--warmup", "0", "--runs", str(n), "--json", "--quiet"] + dims,
                     env=env, cpu=True)[2]
    n = 1000 * (nnxr_cpu(runs) - nnxr_cpu(0)) / runs
    o = 1000 * (ort_cpu(runs + 1) - ort_cpu(1)) / runs
    return n, o


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--nnxr", default=os.path.join(ROOT, "build", "app", "nnxr"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--ort-runner", default=os.path.join(SHARED, "tools", "ort-run.js"))
    ap.add_argument("--ort-keep-all", action="store_true", help="also time onnxruntime keeping every tensor (every node output a graph output)")
    ap.add_argument("--cpu", action="store_true", help="CPU time per inference instead of wall-clock latency")
    args = ap.parse_args()
    models = args.models
    if not models:
        for d in (os.path.join(SHARED, "models"), os.path.join(SHARED, "models", "arch")):
            if os.path.isdir(d):
                models += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".onnx"))
    if not models:
        print("compare-ort: no models (the shared folder is absent)")
        return 0
    for need, what in ((args.nnxr, "nnxr binary"), (args.ort_runner, "ort-run.js"),
                       (os.path.join(AGREE.default_node_path(), "onnxruntime-node"), "onnxruntime-node (run tools/setup.sh)")):
        if not os.path.exists(need):
            print(f"compare-ort: {need}: {what} not found", file=sys.stderr)
            return 2
    env = dict(os.environ, NODE_PATH=AGREE.default_node_path())
    if args.cpu:
        for t in [int(x) for x in args.threads.split(",")]:
            print(f"\n### {t} thread{'s' if t > 1 else ''}, CPU time per inference, {args.rounds} rounds of {args.runs} runs\n")
            print("| model | nnxr CPU ms | ORT CPU ms | ratio (median) | per-round ratios |")
            print("|---|---:|---:|---:|---:|")
            for model in models:
                base = os.path.basename(model)
                dims = []
                for d in DIMS.get(base, []):
                    dims += ["--dim", d]
                try:
                    feeds = fp16_feeds(model, args.ort_runner, env, dims)
                    pairs = [cpu_per_run(args.nnxr, args.ort_runner, model, t, args.runs, dims, feeds, env) for _ in range(max(1, args.rounds))]
                    n_med, o_med = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
                    ratios = [a / b for a, b in pairs if b > 0]
                    print(f"| {base} | {n_med:.2f} | {o_med:.2f} | {n_med / o_med:.2f} | {min(ratios):.2f}–{max(ratios):.2f} |")
                except (RuntimeError, KeyError, ValueError, OSError, ZeroDivisionError, subprocess.CalledProcessError) as e:
                    print(f"| {base} | failed: {str(e)[:120]} | | | |")
                sys.stdout.flush()
        return 0
    for t in [int(x) for x in args.threads.split(",")]:
        print(f"\n### {t} thread{'s' if t > 1 else ''}, {args.rounds} rounds of {args.runs} runs\n")
        keep_all = " ORT keeping every tensor, median ms | ratio to it |" if args.ort_keep_all else ""
        print("| model | nnxr median ms | nnxr min ms | ORT median ms | ORT min ms | ratio (median) | per-round ratios | nnxr max RSS MB | ORT max RSS MB |"
              + keep_all)
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.ort_keep_all else ""))
        for model in models:
            base = os.path.basename(model)
            dims = []
            for d in DIMS.get(base, []):
                dims += ["--dim", d]
            try:
                feeds = fp16_feeds(model, args.ort_runner, env, dims)
                exposed = expose(model) if args.ort_keep_all else None
                n_meds, n_mins, o_meds, o_mins, k_meds, n_rss, o_rss = [], [], [], [], [], 0.0, 0.0
                for _ in range(max(1, args.rounds)):
                    out, rss = timed([args.nnxr, "run", model, "--random", "42", "--threads", str(t), "--repeat", str(args.runs), "--json"]
                                     + dims + feeds)
                    r = json.loads(out)
                    n_meds.append(r["median_ms"])
                    n_mins.append(r["min_ms"])
                    n_rss = max(n_rss, rss)
                    o_med, o_min, rss = ort_latency(args.ort_runner, model, t, args.runs, dims, env)
                    o_meds.append(o_med)
                    o_mins.append(o_min)
                    o_rss = max(o_rss, rss)
                    if exposed:
                        k_meds.append(ort_latency(args.ort_runner, exposed, t, args.runs, dims, env)[0])
                n_med, o_med = statistics.median(n_meds), statistics.median(o_meds)
                ratios = [a / b for a, b in zip(n_meds, o_meds)]
                k_med = statistics.median(k_meds) if k_meds else 0.0
                print(f"| {base} | {n_med:.2f} | {min(n_mins):.2f} | {o_med:.2f} | {min(o_mins):.2f} | {n_med / o_med:.2f} | "
                      f"{min(ratios):.2f}–{max(ratios):.2f} | {n_rss:.0f} | {o_rss:.0f} |" + (f" {k_med:.2f} | {n_med / k_med:.2f} |" if k_meds else ""))
            except (RuntimeError, KeyError, ValueError, OSError, subprocess.CalledProcessError) as e:
                print(f"| {base} | failed: {str(e)[:120]} | | | | | | | |" + (" | |" if args.ort_keep_all else ""))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
