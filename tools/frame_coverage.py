#!/usr/bin/python3
"""How much of the image the network fills, per model and camera preset.

Renders every model (default: the .onnx files in ../shared/models and ../shared/models/arch) with
every camera preset through `nnxr render MODEL --camera PRESET --out X.png` at 1600x900 (or
--width/--height), then reports, for the pixels of the network only:
  width   the fraction of the image width between its leftmost and rightmost columns (of the
          pixels the colour map tints: its reds and blues)
  height  the same for rows
  pixels  the fraction of all pixels (greys included)
  edge    the image edges its tinted pixels touch (l, r, t, b): a clipped network
Not counted as network: the background, the opaque corner panels (title, input picture,
prediction, legend: their plates and everything inside them) the 3D labels' text (white, cyan, yellow) and its dark outline.

  tools/frame_coverage.py [--nnxr build/app/nnxr] [--out DIR] [--models A.onnx,B.onnx]
                          [--presets overview,side] [--jobs 2] [--skip fns-candy] [--json FILE]
  tools/frame_coverage.py --measure X.png [Y.png ...]   (only measure existing renders)

Needs Debian's python3 with numpy and PIL (python3-numpy, python3-pil).
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

import numpy as np
from PIL import Image

BACKGROUND = (39, 39, 53)  # engine's clear colour as written to the PNG
PLATE = (21, 21, 31)       # the corner panels' opaque plates


def panel_mask(img):
    """True inside the bounding box of every opaque panel plate (a large patch of PLATE colour)."""
    h, w, _ = img.shape
    plate = np.all(np.abs(img - np.array(PLATE)) <= 2, axis=2)
    mask = np.zeros((h, w), bool)
    ys, xs = np.nonzero(plate)
    if len(ys) == 0:
        return mask
    # Label the plate pixels by 4-connected flood fill on a coarse grid (4 px cells) for speed.
    cell = 4
    gh, gw = (h + cell - 1) // cell, (w + cell - 1) // cell
    counts = np.zeros((gh, gw), int)
    np.add.at(counts, (ys // cell, xs // cell), 1)
    grid = counts >= 4
    label = np.zeros((gh, gw), int)
    current = 0
    for gy in range(gh):
        for gx in range(gw):
            if not grid[gy, gx] or label[gy, gx]:
                continue
            current += 1
            stack = [(gy, gx)]
            label[gy, gx] = current
            y0 = y1 = gy
            x0 = x1 = gx
            n = 0
            while stack:
                cy, cx = stack.pop()
                n += 1
                y0, y1, x0, x1 = min(y0, cy), max(y1, cy), min(x0, cx), max(x1, cx)
                for ny, nx in ((cy - 1, cx), (cy + 1, cx), (cy, cx - 1), (cy, cx + 1)):
                    if 0 <= ny < gh and 0 <= nx < gw and grid[ny, nx] and not label[ny, nx]:
                        label[ny, nx] = current
                        stack.append((ny, nx))
            if n >= 20:  # at least ~320 plate pixels: a panel, not a stray pixel of a map
                mask[max(0, y0 * cell - 3):min(h, (y1 + 1) * cell + 3), max(0, x0 * cell - 3):min(w, (x1 + 1) * cell + 3)] = True
    return mask


def network_mask(img):
    img = img.astype(np.int32)
    bg = np.abs(img - np.array(BACKGROUND)).sum(axis=2) <= 10  # also the 3D labels' faint plates
    lo, hi = img.min(axis=2), img.max(axis=2)
    white_text = (lo >= 170) & (hi - lo <= 40)
    r, g, b = img[:, :, 0], img[:, :, 1], img[:, :, 2]
    cyan_text = (g >= 170) & (b >= 170) & (r <= g - 40)  # op names
    yellow_text = (r >= 90) & (r - g < 50) & (r - b > 40)  # group labels (the colour map's reds have little green)
    outline = hi < 24  # the text's dark outline
    return ~bg & ~white_text & ~cyan_text & ~yellow_text & ~outline & ~panel_mask(img)


def measure(path):
    img = np.asarray(Image.open(path).convert("RGB"))
    h, w, _ = img.shape
    all_net = network_mask(img)
    # Width, height and edges from the pixels the colour map tints (its reds and blues): the
    # labels' grey anti-aliased text would pass for near-zero neurons.
    rgb = img.astype(np.int32)
    net = all_net & (np.abs(rgb[:, :, 0] - rgb[:, :, 2]) >= 24)
    cols = np.nonzero(net.sum(axis=0) >= 2)[0]
    rows = np.nonzero(net.sum(axis=1) >= 2)[0]
    if len(cols) == 0 or len(rows) == 0:
        return {"width": 0.0, "height": 0.0, "pixels": 0.0, "edge": ""}
    edge = ""
    edge += "l" if net[:, :2].any() else ""
    edge += "r" if net[:, -2:].any() else ""
    edge += "t" if net[:2, :].any() else ""
    edge += "b" if net[-2:, :].any() else ""
    return {
        "width": float(cols[-1] - cols[0] + 1) / w,
        "height": float(rows[-1] - rows[0] + 1) / h,
        "pixels": float(all_net.sum()) / (w * h),
        "edge": edge,
    }


def default_models(root):
    out = []
    for folder in (root, os.path.join(root, "arch")):
        if os.path.isdir(folder):
            out += sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".onnx"))
    return out


def extra_args(model):
    name = os.path.basename(model)
    if name == "face_detection_yunet.onnx":
        return ["--dim", "height=320", "--dim", "width=320"]
    return []


def render(nnxr, model, preset, out, width, height):
    cmd = [nnxr, "render", model, "--camera", preset, "--out", out, "--width", str(width), "--height", str(height)]
    cmd += extra_args(model)
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
    return time.monotonic() - start


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nnxr", default=os.path.join(here, "..", "build", "app", "nnxr"))
    ap.add_argument("--models-dir", default=os.path.join(here, "..", "..", "shared", "models"))
    ap.add_argument("--models", default="", help="comma-separated model files (default: every shared model)")
    ap.add_argument("--skip", default="", help="comma-separated substrings of model names to leave out")
    ap.add_argument("--presets", default="overview,front,side,top")
    ap.add_argument("--out", default="/tmp/nnxr-frame")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default="", help="also write the results here")
    ap.add_argument("--measure", nargs="*", help="only measure these PNGs")
    args = ap.parse_args()

    if args.measure:
        for p in args.measure:
            m = measure(p)
            print(f"{p}: width {m['width']:.1%} height {m['height']:.1%} pixels {m['pixels']:.2%} edge '{m['edge']}'")
        return 0

    models = args.models.split(",") if args.models else default_models(args.models_dir)
    skip = [s for s in args.skip.split(",") if s]
    models = [m for m in models if not any(s in os.path.basename(m) for s in skip)]
    presets = args.presets.split(",")
    os.makedirs(args.out, exist_ok=True)

    def job(model, preset):
        png = os.path.join(args.out, f"{os.path.splitext(os.path.basename(model))[0]}-{preset}.png")
        seconds = render(args.nnxr, model, preset, png, args.width, args.height)
        m = measure(png)
        m.update(model=os.path.basename(model), preset=preset, png=png, seconds=seconds)
        return m

    results = []
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(job, m, p) for m in models for p in presets]
        for f in futures:
            try:
                results.append(f.result())
            except RuntimeError as e:
                failed += 1
                print(f"error: {e}", file=sys.stderr)
    print(f"{'model':40} {'preset':9} {'width':>6} {'height':>6} {'pixels':>7} edge  seconds")
    for r in results:
        short = "  <half" if r["width"] < 0.5 else ""
        print(f"{r['model']:40} {r['preset']:9} {r['width']:6.1%} {r['height']:6.1%} {r['pixels']:7.2%} {r['edge']:5} "
              f"{r['seconds']:6.1f}{short}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
