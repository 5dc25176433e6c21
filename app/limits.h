// The limits every command that runs a model shares: --max-memory, --timeout and
// --max-loop-iterations, and Ctrl-C. parse_limits() consumes the options; install() applies the
// memory ceiling to the runtime and makes SIGINT (and the timeout) stop the run cleanly.
#pragma once

#include <cstdint>
#include <optional>

#include "app/args.h"
#include "model/runtime/runtime.h"

namespace nnxr::app {

struct Limits {
  // Bytes the runtime's tensors may hold (default: a third of MemAvailable in /proc/meminfo).
  uint64_t max_memory = 0;
  bool max_memory_explicit = false;
  // Seconds the command may take in all (0: no limit).
  double timeout_seconds = 0;
  // Iterations of one Loop node in one run.
  int64_t max_loop_iterations = 0;
};

inline constexpr int64_t kDefaultMaxLoopIterations = 1'000'000;

// Consumes --max-memory SIZE (bytes, or with K/M/G/T suffix, binary), --timeout S (seconds,
// fractions allowed) and --max-loop-iterations N.
Limits parse_limits(Args& args);

// A third of MemAvailable (/proc/meminfo); 4 GiB when it cannot be read.
uint64_t default_max_memory();

// Sets the runtime's memory ceiling; installs the SIGINT handler (the first Ctrl-C sets the
// cancel flag, and exits with 130 one second later if the run has not stopped by then); starts
// the timeout's clock (the run stops at the deadline; the process exits with status 1 two seconds
// after it if it is still busy elsewhere, e.g. in one long node or the scene build).
void install(const Limits& limits);

// The options for Session::run(): the cancel flag, the deadline, the Loop cap.
runtime::RunOptions run_options(const Limits& limits);

// Bytes one resident scene element (a neuron or a connection) costs in host memory: the scene
// buffers' two regions of 16 bytes (host-visible, so system RAM on a CPU device such as
// lavapipe) and the scene build's arrays (ordering, values, sort scratch), about 16 more.
inline constexpr uint64_t kSceneBytesPerElement = 48;

// Fits an element budget under the memory ceiling beside what the runtime holds now, and counts
// the scene's bytes against the ceiling from then on (so later runs get what is left). Returns
// `budget`, or a lower one with one line on stderr naming the numbers (`command`: "render",
// "view"); throws a one-line error when not even `minimum` elements fit. `share`: the part of
// what is left that the scene may take (view keeps half for the inferences that come after).
uint64_t reserve_scene_memory(uint64_t budget, const char* command, double share = 1.0, uint64_t minimum = 1);

// True once Ctrl-C was pressed (or the deadline passed): long stages outside the runtime poll it.
bool stop_requested();
// Throws the one-line error for the stop that was requested, if any ("interrupted" / "timed out
// after S s (--timeout)"), naming `stage`.
void check_stop(const char* stage);

// Handles a CancelledError from a run: prints one line and returns the exit code (130 for Ctrl-C,
// 1 for the timeout).
int report_cancelled(const runtime::CancelledError& e);

}  // namespace nnxr::app
