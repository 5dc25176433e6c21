#include "app/limits.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "model/size_string.h"

namespace nnxr::app {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_interrupted{false};
double g_timeout = 0;
std::chrono::steady_clock::time_point g_deadline = std::chrono::steady_clock::time_point::max();
int64_t g_loop_cap = kDefaultMaxLoopIterations;

void on_alarm(int) {
  static const char msg[] = "nnxr: interrupted\n";
  [[maybe_unused]] const auto n = write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(130);
}

void on_sigint(int) {
  if (g_interrupted.exchange(true)) on_alarm(0);  // a second Ctrl-C: at once
  g_stop.store(true);
  alarm(1);  // the run checks the flag between nodes and Loop iterations; this bounds a long node
}

uint64_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.pop_back();
  double scale = 1;
  if (unit.empty()) scale = 1;
  else if (unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else used = 0;
  const double bytes = v * scale;
  if (used == 0 || !(bytes >= 1024 * 1024) || bytes > 1e18)
    throw UsageError("--max-memory: '" + text + "' is not a size from 1M to 1000000T (e.g. 4G, 512M, 2147483648)");
  return static_cast<uint64_t>(bytes);
}

}  // namespace

uint64_t default_max_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024 / 3;
  return uint64_t{4} << 30;
}

Limits parse_limits(Args& args) {
  Limits l;
  if (auto m = args.option("--max-memory")) {
    l.max_memory = parse_size(*m);
    l.max_memory_explicit = true;
  } else {
    l.max_memory = default_max_memory();
  }
  if (auto t = args.option("--timeout")) {
    char* end = nullptr;
    const double s = std::strtod(t->c_str(), &end);
    if (end == t->c_str() || *end != '\0' || !(s > 0 && s <= 1e7)) throw UsageError("--timeout: '" + *t + "' is not a number of seconds above 0");
    l.timeout_seconds = s;
  }
  l.max_loop_iterations = args.int_option("--max-loop-iterations", 1, int64_t{1} << 62).value_or(kDefaultMaxLoopIterations);
  return l;
}

void install(const Limits& limits) {
  runtime::set_memory_limit(limits.max_memory);
  g_loop_cap = limits.max_loop_iterations;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  struct sigaction al {};
  al.sa_handler = on_alarm;
  sigemptyset(&al.sa_mask);
  sigaction(SIGALRM, &al, nullptr);
  if (limits.timeout_seconds > 0) {
    g_timeout = limits.timeout_seconds;
    g_deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                        std::chrono::duration<double>(limits.timeout_seconds));
    // The stages that do not poll the deadline (a long node, a decode, the GPU) end here.
    std::thread([deadline = g_deadline, s = limits.timeout_seconds] {
      std::this_thread::sleep_until(deadline);
      g_stop.store(true);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      std::ostringstream msg;
      msg << "nnxr: timed out after " << s << " s (--timeout)\n";
      const std::string m = msg.str();
      [[maybe_unused]] const auto n = write(STDERR_FILENO, m.data(), m.size());
      _exit(1);
    }).detach();
  }
}

runtime::RunOptions run_options(const Limits& limits) {
  runtime::RunOptions o;
  o.cancel = &g_stop;
  o.deadline = g_deadline;
  o.max_loop_iterations = limits.max_loop_iterations;
  return o;
}

uint64_t reserve_scene_memory(uint64_t budget, const char* command, double share, uint64_t minimum) {
  const uint64_t limit = runtime::memory_limit();
  if (limit == 0) return budget;
  const uint64_t held = runtime::memory_held();
  const uint64_t left = static_cast<uint64_t>(static_cast<double>(limit > held ? limit - held : 0) * std::clamp(share, 0.0, 1.0));
  const uint64_t fits = left / kSceneBytesPerElement;
  if (fits < std::max<uint64_t>(minimum, 1))
    throw std::runtime_error(std::string(command) + ": no memory left for the scene under the memory ceiling of " +
                             model::size_string(limit) + " (--max-memory): the run's tensors hold " + model::size_string(held));
  if (budget > fits) {
    std::cerr << (std::string_view(command) == "render" ? "" : "nnxr: ") << command << ": budget " << budget << " lowered to " << fits << ": at " << kSceneBytesPerElement
              << " bytes an element, that is what fits in the " << model::size_string(left) << (share < 1 ? " (its share) " : " ")
              << "left under the memory ceiling of "
              << model::size_string(limit) << " (--max-memory) beside the run's " << model::size_string(held) << '\n';
    budget = fits;
  }
  runtime::memory_acquire(budget * kSceneBytesPerElement);  // held until the process exits
  return budget;
}

bool stop_requested() { return g_stop.load(); }

void check_stop(const char* stage) {
  if (!g_stop.load()) return;
  if (g_interrupted.load()) throw runtime::CancelledError(runtime::CancelledError::Reason::Cancelled, stage);
  throw runtime::CancelledError(runtime::CancelledError::Reason::TimedOut, stage);
}

int report_cancelled(const runtime::CancelledError& e) {
  // The timeout's watchdog sets the cancel flag too: what stopped the run is told by what was
  // asked for, not by which check noticed first.
  const bool interrupted = g_interrupted.load();
  std::ostringstream msg;
  if (interrupted)
    msg << "nnxr: interrupted";
  else if (e.reason() == runtime::CancelledError::Reason::TimedOut || g_timeout > 0)
    msg << "nnxr: timed out after " << g_timeout << " s (--timeout)";
  else
    msg << "nnxr: the run was cancelled";
  if (!e.node().empty()) msg << (e.node().find('(') != std::string::npos ? " in node " : " during ") << e.node();
  std::cerr << msg.str() << '\n';
  return interrupted ? 130 : 1;
}

}  // namespace nnxr::app
