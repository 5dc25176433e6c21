// The CPU inference runtime: Graph -> Plan (built once) -> Session (per-run state).
//
//   auto plan = runtime::Plan::build(model::load_model("m.onnx"));
//   runtime::Session s(plan, {.threads = 2});
//   s.set_input("input", model::DType::Float, shape, bytes);
//   s.run();
//   const runtime::Value* y = s.find("output");
//
// Every tensor of the graph (inputs, initializers, Constant outputs and every node output) is kept
// after run() and reachable by name; see Session::tensors().
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/ops.h"
#include "model/runtime/value.h"

namespace nnxr::runtime {

// A run or plan that failed. what() is one line naming the node ('name' (OpType)) and tensor.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by Session::run() when the plan has nodes without a kernel, after every node that does
// not depend on one of them has been computed (those tensors stay reachable).
class UnsupportedError : public RuntimeError {
 public:
  UnsupportedError(const std::string& what, std::vector<model::UnsupportedOp> ops)
      : RuntimeError(what), ops_(std::move(ops)) {}
  const std::vector<model::UnsupportedOp>& ops() const { return ops_; }

 private:
  std::vector<model::UnsupportedOp> ops_;
};

// Thrown by Session::run() when RunOptions::cancel became true or RunOptions::deadline passed.
// node() is the outermost node that was running (empty: stopped between nodes).
class CancelledError : public RuntimeError {
 public:
  enum class Reason { Cancelled, TimedOut };
  CancelledError(Reason reason, std::string node)
      : RuntimeError(message(reason, node)), reason_(reason), node_(std::move(node)) {}
  Reason reason() const { return reason_; }
  const std::string& node() const { return node_; }

 private:
  static std::string message(Reason r, const std::string& node) {
    return std::string(r == Reason::Cancelled ? "the run was cancelled" : "the run passed its time limit") +
           (node.empty() ? "" : " in node " + node);
  }
  Reason reason_;
  std::string node_;
};

// Immutable once built: per node a kernel chosen by (domain, op_type, opset) with its attributes
// decoded, weights shared with the Graph (no copy). Owns its Graph. Any number of Sessions, on
// any threads, may use one Plan at the same time.
class Plan {
 public:
  // Builds the plan; throws RuntimeError for a node whose attributes are invalid. Nodes without a
  // kernel do not throw here; see unsupported().
  static std::shared_ptr<const Plan> build(model::Graph graph);

  const model::Graph& graph() const;
  // Ops with no kernel, with their counts (empty when everything runs).
  const std::vector<model::UnsupportedOp>& unsupported() const;

  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Plan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct SessionOptions {
  // Threads for the runtime's kernels, matrix products included; 0 = hardware_concurrency().
  // OpenBLAS itself runs single-threaded (run() sets its process-wide count to 1): large products
  // are split over this session's threads instead.
  int threads = 1;
  // Record the time of every node in RunStats::node_ms.
  bool profile = false;
};

// Limits of one run, checked between nodes and at every iteration of a Loop or Scan (inside
// their bodies too). A kernel that is already running finishes first, so a single long node
// delays the stop by its own time.
struct RunOptions {
  // When it becomes true (e.g. from a signal handler or another thread), run() throws
  // CancelledError (Reason::Cancelled).
  const std::atomic<bool>* cancel = nullptr;
  // A second flag with the same effect (e.g. a viewer's own shutdown flag beside the process's
  // Ctrl-C flag in `cancel`).
  const std::atomic<bool>* cancel_too = nullptr;
  // When it passes, run() throws CancelledError (Reason::TimedOut).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Iterations of one Loop node in one run (0: no cap); beyond it run() throws RuntimeError naming
  // the node. A trip count of 1e9 or a condition that stays true ends here. The steps of one Scan
  // node (over all its batch rows) are capped the same way, checked before the first step.
  int64_t max_loop_iterations = 0;

  // A run that streams its activations (e.g. a render writing each tensor's image as it comes,
  // which then needs only the few it shows in detail): on_ready is called on the run's thread
  // after each node, for each tensor the node made ready (its outputs, then those of the nodes
  // fused into it), while the value is held.
  std::function<void(model::TensorId, const Value&)> on_ready;
  // By TensorId, the node outputs the Session holds after the run (nullptr: every one). Any other
  // is freed, its storage given back, as soon as no later node reads it (on_ready has seen it
  // then); value() returns nullptr for it. The run then holds the live tensors at any time rather
  // than every activation.
  const std::vector<bool>* keep = nullptr;

  // Throws CancelledError when cancel is set or the deadline passed (node: what was running).
  void check(const std::string& node = {}) const;
};

// What run() did.
struct RunStats {
  int nodes_run = 0;
  int nodes_fused = 0;    // of those run, the ones computed in the output pass of the Conv they follow or in the pass of an element-wise chain
  int nodes_skipped = 0;  // unsupported, or depending on an unsupported node
  double milliseconds = 0;
  std::vector<double> node_ms;  // per node (Graph::nodes order) when SessionOptions::profile
};

// One tensor after a run.
struct TensorView {
  model::TensorId id = model::kNone;
  std::string_view name;
  model::TensorKind kind = model::TensorKind::Activation;
  std::string_view node;  // producing node's name; empty for inputs and initializers
  const Value* value = nullptr;
};

// Per-run state: one buffer per tensor, reused across runs (capacity is kept, except for the
// tensors a run let go: RunOptions::keep). Keeps the Plan alive. Not thread-safe: one thread at a
// time uses a Session; its worker threads live only inside run(). Pointers returned by
// find()/tensors() stay valid until the next set_input(), run() or the Session's destruction.
class Session {
 public:
  explicit Session(std::shared_ptr<const Plan> plan, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const Plan& plan() const { return *plan_; }
  void set_threads(int threads);
  int threads() const;

  // Feeds a graph input by name or by position in Graph::inputs. dtype must match the graph's,
  // known dims must match, and bytes.size() must be dtype_size x elements. Throws RuntimeError.
  void set_input(std::string_view name, model::DType dtype, std::span<const int64_t> shape,
                 std::span<const std::byte> bytes);
  void set_input(size_t index, model::DType dtype, std::span<const int64_t> shape,
                 std::span<const std::byte> bytes);

  // Runs every node. Throws RuntimeError on the first failing node (tensors computed before it
  // stay reachable), UnsupportedError when some nodes had no kernel, CancelledError when
  // `options` stops it.
  RunStats run(const RunOptions& options);
  RunStats run() { return run(RunOptions{}); }

  // The tensor named `name` if it exists and holds a value (after a run, or an input/weight).
  const Value* find(std::string_view name) const;
  const Value* value(model::TensorId id) const;
  // Every tensor that holds a value, in graph order (inputs, initializers, then node outputs).
  std::vector<TensorView> tensors() const;

 private:
  struct State;
  std::shared_ptr<const Plan> plan_;
  std::unique_ptr<State> state_;
};

// Where non-finite values (NaN, ±Inf) enter a run, for warnings: one line per graph input or
// weight that holds some, and per node whose float32 outputs hold some while its inputs held none
// (nodes fed non-finite values are not listed again). At most max_lines lines plus a count of the
// rest; empty when every float32 tensor is finite. Reads every float32 tensor of the session once.
std::vector<std::string> non_finite_report(const Session& session, size_t max_lines = 8);

// non_finite_report() for a run that lets its activations go (RunOptions::keep): count() each
// tensor while it is held (node outputs from RunOptions::on_ready; the graph's inputs and weights
// after the run), then report() says what non_finite_report() would have.
class NonFiniteScan {
 public:
  explicit NonFiniteScan(const model::Graph& graph);
  void count(model::TensorId id, const Value& value);
  std::vector<std::string> report(size_t max_lines = 8) const;

 private:
  struct Counted {
    int64_t nan = 0, inf = 0, elements = 0;
  };
  const model::Graph* graph_;
  std::vector<Counted> counted_;  // by TensorId
};

// The instruction sets the kernels are built for, widest last. The set that runs is chosen once,
// at the first kernel call, from what the CPU (and OS) supports: AVX-512 (F, BW, VL, DQ) before
// AVX2 + FMA (both with F16C) before portable C++. The environment variable NNXR_ISA=avx512|avx2|portable lowers it
// (a set the CPU lacks, or an unknown name, gives a warning on stderr and the widest set).
enum class Isa { Portable, Avx2, Avx512 };
const char* isa_name(Isa isa);  // "portable", "avx2", "avx512"
Isa cpu_isa();                  // the widest set this CPU runs
Isa active_isa();               // the set the kernels use
// Makes the kernels use `isa` from now on (tests run every path against the references; not
// while a Session runs). False, and nothing changed, when the CPU lacks it.
bool set_active_isa(Isa isa);

// Kernel registry queries (also behind model::runtime_supports()).
bool has_kernel(std::string_view domain, std::string_view op_type);
std::vector<std::string> supported_ops();  // "" domain op names, sorted

}  // namespace nnxr::runtime
