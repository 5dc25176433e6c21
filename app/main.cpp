// nnxr: walk through a real neural network. Dispatches to the subcommands in app/.
#include <algorithm>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "app/commands.h"
#include "model/graph.h"
#ifdef NNXR_HAVE_RUNTIME
#include "app/limits.h"
#endif

namespace {

constexpr const char* kHelp = R"(nnxr — walk through a real neural network

usage:
  nnxr [view] [MODEL.onnx] [--input FILE|DIR]... [--random SEED] [--compare FILE] [--xr | --desktop] [--budget N] [--frames N [--stats]] ...
  nnxr inspect [MODEL.onnx] [--json] [--dim NAME=VALUE]... [--scene [--input FILE] [--compare FILE [--show a|b|diff]] [--random SEED] [--budget N] [--top-k K]]
  nnxr run [MODEL.onnx] [--input [NAME=]FILE]... [--random SEED] [--threads N] [--repeat N] [--profile] [--dump DIR] [--json]
  nnxr render [MODEL.onnx] --out FILE.png [--width W] [--height H] [--camera PRESET] [--input FILE] [--compare FILE] ...
  nnxr help | --help | --version

Without MODEL, nnxr uses its embedded default model (an 8x8 handwritten-digit CNN).

view      (the default command) loads the model, runs it, lays the network out and shows it in a
          desktop window: WASD + mouse to fly, scroll to scale, [ ] neuron threshold, , . connection
          threshold, Page Down / Page Up step the layer window deeper / shallower (and walk to
          it), End / Home narrow / widen it, click to select a neuron, R to reset the view and
          filters, / to find a tensor by name (Enter flies there), the filter menu (right edge:
          op types, dim/hide, isolate the selected tensor or its path, reset) clicked, F12 to save a screenshot, drop an
          image to use it as the input. Without a display it renders offscreen to a PNG instead.
          With an OpenXR runtime and a headset, view uses the headset instead: squeeze grabs the
          network (both hands: scale and turn), the right thumbstick steps the neuron (up/down)
          and connection (left/right) thresholds, the left thumbstick steps the layer window
          (forward/back, walking to it) and narrows/widens it (left/right), the trigger selects
          what the aim ray hits, the menu button puts the network back in front of you and resets
          thresholds and filters; the filter menu stands on the left controller (turn it to you)
          and the right ray and trigger press its rows. Each controller shows its aim ray, the
          right one gauges of both thresholds, and a panel shows the selected neuron; the title,
          prediction and legend stand on a board to the left of the network. With a display, a
          desktop window mirrors the left eye.
          --desktop             require the desktop window (error when there is no display)
          --xr                  require the headset (error when there is no OpenXR runtime or HMD)
          --no-mirror           in the headset: no desktop window mirroring the left eye
          --input FILE | --random SEED   as for run (default model: a sample digit)
          --input DIR | --input FILE --input FILE ...   several inputs for one model input (a
                                directory: its images, .npy and .pb files by name); left/right
                                arrows (X/Y on the left controller) step through them
          --compare [NAME=]FILE  input B beside A (kept, so flips cost no inference): C shows
                                A, B or the difference a_A - a_B in turn (diverging colours
                                per tensor, connections ranked by |w (a_A - a_B)|)
          --show a|b|diff       with --compare: what is shown first (default diff)
          --budget N            resident neurons + connections (default 2000000; lowered to what
                                the Vulkan device can hold)
          --threads N           threads for inference and the scene build (default 2)
          --focus T[,T...]|all  points and connections for these tensors only (all: every
                                tensor); by default for the tensors nearest you in view, the
                                one you look at and the selection, following you as you move
                                (the images show every activation regardless)
          --width W --height H  window or image size (default 1280x720)
          --frames N            exit after N frames once the scene is shown
          --stats               with --frames: print one JSON line (frame CPU and wall time
                                median/p99, frames, resident and drawn elements, world transform,
                                thresholds, selection, errors, input {index, count, file},
                                input_switch_ms, compare {show, flip_ms}; in the headset also the
                                session states reached and the time from xrWaitFrame to
                                xrEndFrame, the depth layer and the mirror's presented/skipped
                                frames)
          --layers A:B          show layers A to B only (also A, A: and :B)
          --ops OP,...          show only tensors produced by these ops (e.g. Conv,Relu)
          --tensors NAME,...    show only these tensors
          --filter-mode hide|dim   what happens to the rest (default hide)
          --out FILE.png        save the last frame (default without a display: nnxr-view.png)
          --validation          enable the Vulkan validation layers
          --labels FILE, --image-preset P, --show-constants   as for render

inspect   producer, opsets, inputs and outputs with shapes, node count by op type, layers,
          parameters, activation elements, and the ops the runtime cannot execute yet.
          --json          every tensor with name, dtype, shape, layer, kind and producing op
          --dim NAME=N    value for a symbolic input dimension (default 1, with a warning)
          --scene         run the model and build the scene instead: per tensor its neurons,
                          candidate and kept connections; totals, resident bytes, stage times,
                          and the ops without connection semantics
            --input [NAME=]FILE | --random SEED   as for run (default model: a sample digit;
                                  otherwise seeded random values, seed 0)
            --budget N    resident neurons + connections (default 20000000)
            --top-k K     incoming connections kept per neuron, 1..16 (default 8)
            --threads N   threads for inference and the scene build (default 1; 0 = all cores)
            --layers A:B, --ops OP,..., --tensors NAME,..., --filter-mode hide|dim
                          as for view: the tensors listed (dimmed ones flagged) and shown counts
            --compare [NAME=]FILE   run the model on a second input B too (an image, .npy or .pb
                          for the first input or input NAME; the others as for A): per tensor
                          its divergence, rel L2 |a_A - a_B| / |a_A| and cosine similarity
                          (JSON: "divergence" of each tensor), and the tensors that changed most
            --show a|b|diff   with --compare: the scene of A, of B, or of the difference
                          a_A - a_B (default), connections ranked by |w (a_A - a_B)|

run       runs the model on the CPU and reports its outputs; every tensor is kept.
          --input [NAME=]FILE   .npy, ONNX TensorProto .pb, or an image (.png/.jpg), in input order
                                or by name; images are resized and normalised by the model's
                                metadata or --image-scale S --image-mean M[,..] --image-std S[,..],
                                or --image-preset imagenet|caffe|unit|raw (caffe: BGR, 0-255,
                                mean 104/117/123); the choice in effect is printed
          --random SEED   fill inputs not given with seeded random values (ort-run.js's generator)
          --labels FILE   class names, one a line (default: built-in lists by output size); a
                          classifier's top-5 and a detector's boxes are printed after the outputs
          --threads N     threads for the kernels and OpenBLAS (default 1; 0 = all cores)
          --repeat N      run N more times and print median= and min= latency in ms
          --profile       print the time per op type and the slowest nodes, averaged over the
                          --repeat runs (with --json: the time of every node)
          --dump DIR      write every computed tensor as .npy, with DIR/index.json
          --json          one JSON object instead of text

render    runs the model, lays the network out and renders it offscreen to a PNG (no display
          needed; any Vulkan device, e.g. Mesa's lavapipe).
          --out FILE.png        the image to write (required)
          --width W --height H  image size in pixels (default 1600x900)
          --camera PRESET       overview (default), front, side or top; frames the whole network
          --input FILE | --random SEED   as for run (default model: a sample digit)
          --compare [NAME=]FILE  input B: render the difference a_A - a_B (or --show a|b)
          --neuron-threshold Q  per-tensor quantile of neurons to hide (default 0: show all)
          --connection-threshold Q  per-tensor quantile of connections to hide (default 0.5, as view)
          --labels FILE         class names, one a line, for the prediction panel (default: the
                                model's metadata, or ImageNet-1k, CIFAR-10, digits or COCO by the
                                output's size)
          --image-preset P      as for run
          --show-constants      also lay out tensors computed from weights alone and Dropout masks
          --budget N            resident neurons + connections (default 20000000)
          --focus T[,T...]|all  points and connections for these tensors only (default: those
                                nearest the camera in view, up to 500000 neurons; all: every
                                tensor, every connection); a focus keeps 2000
                                connections per tensor, its strongest
          --threads N           threads for inference and the scene build (default 1)
          --layers A:B          show layers A to B only (also A, A: and :B)
          --ops OP,...          show only tensors produced by these ops (e.g. Conv,Relu)
          --tensors NAME,...    show only these tensors
          --filter-mode hide|dim   what happens to the rest (default hide)
                                (the camera frames what is shown)

limits (run, render, view and inspect --scene):
          --max-memory SIZE     ceiling on the bytes the runtime's tensors hold, e.g. 4G or 512M
                                (default a third of MemAvailable); beyond it the node is refused
          --timeout S           give up after S seconds (exit status 1)
          --max-loop-iterations N  iterations of one Loop node, or steps of one Scan
                                (default 1000000)
          Ctrl-C stops a run between nodes and exits with status 130 within a second.

exit status: 0 success, 1 the model or input is at fault, 2 the command line is at fault,
130 interrupted.
)";

// The help of one command: its usage line and its section of kHelp.
std::string command_help(const std::string& command) {
  const std::string help = kHelp;
  std::string usage, section;
  size_t at = 0;
  bool in_section = false;
  while (at < help.size()) {
    const size_t end = std::min(help.find('\n', at), help.size());
    const std::string line = help.substr(at, end - at);
    at = end + 1;
    if (line.rfind("  nnxr " + command + " ", 0) == 0 || (command == "view" && line.rfind("  nnxr [view]", 0) == 0)) usage = line;
    if (!line.empty() && line[0] != ' ') in_section = line.rfind(command + " ", 0) == 0;
    if (in_section) section += line + '\n';
  }
  return "usage:\n" + usage + "\n\n" + section;
}

int dispatch(const std::string& command, std::vector<std::string> words) {
  using namespace nnxr::app;
  Args args(command, std::move(words));
  if (command == "inspect") return inspect_command(args);
#ifdef NNXR_HAVE_ENGINE
  if (command == "render") return render_command(args);
  if (command == "view") return view_command(args);
#endif
  if (command == "view") {
    std::cerr << "nnxr: the renderer is not built yet in this version; showing `nnxr inspect` instead\n";
    Args inspect("inspect", {});
    auto pos = args.positionals();
    args.finish();
    if (!pos.empty()) inspect = Args("inspect", {pos[0]});
    return inspect_command(inspect);
  }
#ifdef NNXR_HAVE_RUNTIME
  if (command == "run") return run_command(args);
#endif
  if (command == "run" || command == "render")
    throw UsageError("'nnxr " + command + "' is not available yet in this version (see nnxr --help)");
  throw UsageError("unknown command '" + command + "' (see nnxr --help)");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  std::string command = "view";
  if (!words.empty()) {
    const std::string& first = words.front();
    if (first == "help" || first == "--help" || first == "-h") {
      std::cout << kHelp;
      return 0;
    }
    if (first == "--version") {
      std::cout << "nnxr 0.1.0\n";
      return 0;
    }
    if (first == "view" || first == "inspect" || first == "run" || first == "render") {
      command = first;
      words.erase(words.begin());
    } else if (first.empty() || first[0] != '-') {
      // `nnxr MODEL.onnx ...` is `nnxr view MODEL.onnx ...`, unless it looks like a misspelt command.
      if (first.find('.') == std::string::npos && first.find('/') == std::string::npos) command = first, words.erase(words.begin());
    }
  }
  for (const std::string& w : words)
    if (w == "--help" || w == "-h") {
      if (command != "view" && command != "inspect" && command != "run" && command != "render") break;
      std::cout << command_help(command);
      return 0;
    }
  try {
    return dispatch(command, std::move(words));
  } catch (const nnxr::app::UsageError& e) {
    std::cerr << "nnxr: " << e.what() << '\n';
    return 2;
#ifdef NNXR_HAVE_RUNTIME
  } catch (const nnxr::runtime::CancelledError& e) {
    return nnxr::app::report_cancelled(e);
#endif
  } catch (const std::runtime_error& e) {  // ModelError, RuntimeError: the model or input at fault
    // Names from the file are escaped where the message is built; this bounds the whole line.
    std::cerr << "nnxr: " << nnxr::model::display_name(e.what(), 2000) << '\n';
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "nnxr: out of memory while loading or preparing '" << command
              << "' (the model or an input needs more memory than is free)\n";
    return 1;
  } catch (const std::length_error& e) {
    std::cerr << "nnxr: a size in the model or an input is too large to allocate (" << e.what() << ")\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "nnxr: " << e.what() << '\n';
    return 1;
  }
}
