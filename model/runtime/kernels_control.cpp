// Control flow: If, Loop, Scan (opset 8 and 9+).
//
// The loader saves each body as a model of its own (Attribute::s) whose inputs are the body's
// own followed by the outer tensors it reads (Attribute::strings), which the loader also appended
// to the node's inputs. A body is loaded and planned for each distinct set of input shapes it
// meets (cached; the cache is shared by the Sessions using the Plan, under a mutex) and run in a
// Session of its own; the body's intermediate tensors are not kept, only its outputs.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "model/load.h"
#include "model/runtime/kernel.h"
#include "model/runtime/kernels_more.h"

namespace nnxr::runtime {
namespace {

class Body {
 public:
  Body(const KernelInit& init, const model::Attribute& a, size_t outer_first) : name_(a.name), bytes_(a.s), outer_first_(outer_first) {
    outer_count_ = a.strings.size();
    try {
      const model::Graph g = model::load_model_from_memory(std::as_bytes(std::span(bytes_.data(), bytes_.size())), "body " + runtime::quoted(a.name));
      for (auto id : g.inputs) input_names_.push_back(g.tensors[id].name);
      outputs_ = g.outputs.size();
    } catch (const std::exception& e) {
      init.fail(std::string("body ") + runtime::quoted(a.name) + ": " + e.what());
    }
    if (input_names_.size() < outer_count_) init.fail("body " + runtime::quoted(a.name) + " has fewer inputs than the outer tensors it reads");
  }

  size_t own_inputs() const { return input_names_.size() - outer_count_; }
  size_t outputs() const { return outputs_; }

  // Runs the body on `own` (its own inputs) and the outer tensors from the node's inputs.
  std::vector<Value> run(KernelContext& ctx, const std::vector<const Value*>& own) const {
    if (own.size() != own_inputs())
      ctx.fail("body " + runtime::quoted(name_) + " takes " + std::to_string(own_inputs()) + " inputs, given " + std::to_string(own.size()));
    std::vector<const Value*> all = own;
    for (size_t i = 0; i < outer_count_; ++i) all.push_back(&ctx.in(outer_first_ + i));
    std::vector<Shape> shapes;
    for (const Value* v : all) shapes.push_back(v->dims());
    std::shared_ptr<const Plan> plan;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto it = plans_.find(shapes);
      if (it == plans_.end()) {
        model::LoadOptions options;
        for (size_t i = 0; i < all.size(); ++i) options.input_shapes[input_names_[i]] = shapes[i];
        try {
          auto p = Plan::build(model::load_model_from_memory(std::as_bytes(std::span(bytes_.data(), bytes_.size())), "body " + runtime::quoted(name_), options));
          if (plans_.size() > 64) plans_.clear();  // shapes that keep changing: do not grow without bound
          it = plans_.emplace(shapes, std::move(p)).first;
        } catch (const RuntimeError&) {
          throw;
        } catch (const std::exception& e) {
          ctx.fail("body " + runtime::quoted(name_) + ": " + e.what());
        }
      }
      plan = it->second;
    }
    Session s(plan);
    const model::Graph& g = plan->graph();
    for (size_t i = 0; i < all.size(); ++i) s.set_input(i, all[i]->dtype(), all[i]->shape(), {all[i]->data(), all[i]->byte_size()});
    try {
      s.run(ctx.run_options());
    } catch (const CancelledError&) {
      throw;
    } catch (const RuntimeError& e) {
      ctx.fail("body " + runtime::quoted(name_) + ": " + e.what());
    }
    std::vector<Value> out(g.outputs.size());
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const Value* v = s.value(g.outputs[k]);
      if (!v) ctx.fail("body " + runtime::quoted(name_) + " did not compute output " + runtime::quoted(g.tensors[g.outputs[k]].name));
      out[k].assign(v->dtype(), v->dims(), {v->data(), v->byte_size()});
    }
    return out;
  }

 private:
  std::string name_;
  std::string bytes_;
  size_t outer_first_ = 0, outer_count_ = 0;
  std::vector<std::string> input_names_;
  size_t outputs_ = 0;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<Shape>, std::shared_ptr<const Plan>> plans_;
};

// The node's graph attributes by name, with the index of the first node input holding each one's
// outer tensors.
std::map<std::string, std::shared_ptr<Body>> bodies(const KernelInit& init) {
  size_t extra = 0;
  for (const auto& a : init.attrs().all())
    if (a.kind == model::Attribute::Kind::Graph) extra += a.strings.size();
  if (extra > init.input_count()) init.fail("the node lists fewer inputs than its bodies read");
  size_t first = init.input_count() - extra;
  std::map<std::string, std::shared_ptr<Body>> out;
  for (const auto& a : init.attrs().all()) {
    if (a.kind != model::Attribute::Kind::Graph) continue;
    if (a.s.empty()) init.fail("graph attribute " + runtime::quoted(a.name) + " is empty");
    out[a.name] = std::make_shared<Body>(init, a, first);
    first += a.strings.size();
  }
  return out;
}

size_t declared_inputs(const KernelInit& init) {
  size_t extra = 0;
  for (const auto& a : init.attrs().all())
    if (a.kind == model::Attribute::Kind::Graph) extra += a.strings.size();
  return init.input_count() - extra;
}

bool scalar_bool(const KernelContext& ctx, const Value& v, const std::string& what) {
  if (v.elements() != 1 || v.dtype() != DType::Bool) ctx.fail(what + " must be a bool scalar, is " + std::string(model::dtype_name(v.dtype())) + " " + shape_str(v.shape()));
  return v.as<uint8_t>()[0] != 0;
}

// Stacks equal-shaped values along a new axis `axis` (0..rank).
void stack(const KernelContext& ctx, const std::vector<Value>& parts, int64_t axis, Value& out, DType empty_type) {
  if (parts.empty()) {
    out.reset(empty_type == DType::Undefined ? DType::Float : empty_type, {0});
    return;
  }
  const Shape& s = parts[0].dims();
  for (const Value& p : parts)
    if (p.dims() != s || p.dtype() != parts[0].dtype()) ctx.fail("scan outputs of the iterations differ in shape or type");
  if (axis < 0 || axis > static_cast<int64_t>(s.size())) ctx.fail("scan output axis " + std::to_string(axis) + " is out of range");
  Shape os = s;
  os.insert(os.begin() + axis, static_cast<int64_t>(parts.size()));
  out.reset(parts[0].dtype(), os);
  const size_t es = model::dtype_size(parts[0].dtype());
  const int64_t outer = product(std::span<const int64_t>(s).subspan(0, static_cast<size_t>(axis)));
  const size_t inner = static_cast<size_t>(product(std::span<const int64_t>(s).subspan(static_cast<size_t>(axis)))) * es;
  const auto n = static_cast<int64_t>(parts.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      if (inner) std::memcpy(out.mutable_data() + static_cast<size_t>(o * n + k) * inner, parts[static_cast<size_t>(k)].data() + static_cast<size_t>(o) * inner, inner);
}

// Slice `index` of `v` along `axis` (the axis removed).
void take(const Value& v, int64_t axis, int64_t index, Value& out) {
  Shape s = v.dims();
  const int64_t n = s[static_cast<size_t>(axis)];
  s.erase(s.begin() + axis);
  out.reset(v.dtype(), s);
  const size_t es = model::dtype_size(v.dtype());
  const int64_t outer = product(std::span<const int64_t>(v.dims()).subspan(0, static_cast<size_t>(axis)));
  const size_t inner = static_cast<size_t>(product(std::span<const int64_t>(v.dims()).subspan(static_cast<size_t>(axis) + 1))) * es;
  for (int64_t o = 0; o < outer; ++o)
    if (inner) std::memcpy(out.mutable_data() + static_cast<size_t>(o) * inner, v.data() + static_cast<size_t>(o * n + index) * inner, inner);
}

void put(KernelContext& ctx, size_t slot, const Value& v) {
  if (ctx.has_output(slot)) ctx.out(slot).assign(v.dtype(), v.dims(), {v.data(), v.byte_size()});
}

// ---- Scan ------------------------------------------------------------------------------------

struct ScanAttrs {
  int64_t num_scan_inputs = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
  bool v8 = false;
};

// One scan over a batch element (opset 8) or the whole inputs (9+): states and scan inputs in,
// final states and stacked scan outputs written to `finals` / `scans`.
void scan_once(KernelContext& ctx, const Body& body, const ScanAttrs& at, const std::vector<const Value*>& states,
               const std::vector<const Value*>& xs, std::vector<Value>& finals, std::vector<Value>& scans, int64_t& steps_done) {
  const size_t N = states.size(), M = xs.size();
  int64_t len = -1;
  std::vector<int64_t> axes(M);
  for (size_t j = 0; j < M; ++j) {
    const int64_t rank = static_cast<int64_t>(xs[j]->rank());
    const int64_t a = at.in_axes.empty() ? 0 : at.in_axes[j];
    axes[j] = norm_axis(ctx, a, rank, "scan_input_axes value");
    const int64_t l = xs[j]->dims()[static_cast<size_t>(axes[j])];
    if (len >= 0 && l != len) ctx.fail("scan inputs differ in sequence length");
    len = l;
  }
  if (len < 0) ctx.fail("needs at least one scan input");
  // The Loop cap bounds a Scan too: its length is known before the first step, so a sequence of
  // 1e9 steps (e.g. over an input of shape [1e9, 0], which holds no data) is refused at once.
  const int64_t cap = ctx.run_options().max_loop_iterations;
  if (cap > 0 && (len > cap - steps_done))
    ctx.fail("scans " + std::to_string(len) + " steps" + (steps_done ? " (after " + std::to_string(steps_done) + " in earlier batch rows)" : std::string()) +
             ", more than the cap of " + std::to_string(cap) + " Loop and Scan iterations (raise the cap with --max-loop-iterations)");
  steps_done += len;
  std::vector<Value> cur(N);
  for (size_t i = 0; i < N; ++i) cur[i].assign(states[i]->dtype(), states[i]->dims(), {states[i]->data(), states[i]->byte_size()});
  const size_t K = body.outputs() >= N ? body.outputs() - N : 0;
  std::vector<std::vector<Value>> parts(K);
  std::vector<Value> slices(M);
  for (int64_t t = 0; t < len; ++t) {
    ctx.check_run();
    std::vector<const Value*> in;
    for (size_t i = 0; i < N; ++i) in.push_back(&cur[i]);
    for (size_t j = 0; j < M; ++j) {
      const bool reverse = !at.in_dirs.empty() && at.in_dirs[j] != 0;
      take(*xs[j], axes[j], reverse ? len - 1 - t : t, slices[j]);
      in.push_back(&slices[j]);
    }
    std::vector<Value> out = body.run(ctx, in);
    if (out.size() != N + K) ctx.fail("body output count does not match");
    for (size_t i = 0; i < N; ++i) cur[i] = std::move(out[i]);
    for (size_t k = 0; k < K; ++k) parts[k].push_back(std::move(out[N + k]));
  }
  finals = std::move(cur);
  scans.assign(K, Value());
  for (size_t k = 0; k < K; ++k) {
    if (!at.out_dirs.empty() && k < at.out_dirs.size() && at.out_dirs[k] != 0) std::reverse(parts[k].begin(), parts[k].end());
    int64_t axis = at.out_axes.empty() || k >= at.out_axes.size() ? 0 : at.out_axes[k];
    if (axis < 0 && !parts[k].empty()) axis += static_cast<int64_t>(parts[k][0].rank()) + 1;
    stack(ctx, parts[k], axis, scans[k], DType::Float);
  }
}

}  // namespace

void register_control(Registry& r) {
  r.add("If", [](const KernelInit& init) {
    auto b = bodies(init);
    if (!b.count("then_branch") || !b.count("else_branch")) init.fail("needs then_branch and else_branch");
    auto then_b = b["then_branch"], else_b = b["else_branch"];
    return make_kernel([then_b, else_b](KernelContext& ctx) {
      const Body& body = scalar_bool(ctx, ctx.in(0), "cond") ? *then_b : *else_b;
      const std::vector<Value> out = body.run(ctx, {});
      if (out.size() != ctx.output_count()) ctx.fail("the branch has " + std::to_string(out.size()) + " outputs, the node " + std::to_string(ctx.output_count()));
      for (size_t k = 0; k < out.size(); ++k) put(ctx, k, out[k]);
    });
  }, false);

  r.add("Loop", [](const KernelInit& init) {
    auto b = bodies(init);
    if (!b.count("body")) init.fail("needs a body");
    auto body = b["body"];
    const size_t declared = declared_inputs(init);
    if (declared < 2) init.fail("needs inputs M and cond (either may be empty)");
    const size_t N = declared - 2;
    if (body->own_inputs() != N + 2) init.fail("the body takes " + std::to_string(body->own_inputs()) + " inputs for " + std::to_string(N) + " loop-carried values");
    if (body->outputs() < N + 1) init.fail("the body has too few outputs");
    return make_kernel([body, N](KernelContext& ctx) {
      int64_t max_trip = -1;
      if (ctx.has_input(0)) {
        const auto m = read_ints(ctx, 0);
        if (m.size() != 1) ctx.fail("M must be a scalar");
        max_trip = m[0];
      }
      bool cond = ctx.has_input(1) ? scalar_bool(ctx, ctx.in(1), "cond") : true;
      std::vector<Value> cur(N);
      for (size_t i = 0; i < N; ++i) {
        const Value& v = ctx.in(2 + i);
        cur[i].assign(v.dtype(), v.dims(), {v.data(), v.byte_size()});
      }
      const size_t K = body->outputs() - 1 - N;
      std::vector<std::vector<Value>> parts(K);
      Value iter, cond_v;
      const int64_t cap = ctx.run_options().max_loop_iterations;
      for (int64_t i = 0; (max_trip < 0 || i < max_trip) && cond; ++i) {
        if (max_trip < 0 && !ctx.has_input(1)) ctx.fail("neither M nor cond is given: the loop would not end");
        ctx.check_run();
        if (cap > 0 && i >= cap)
          ctx.fail("stopped after " + std::to_string(cap) + " iterations, the cap on Loop iterations (trip count " +
                   (max_trip < 0 ? std::string("unbounded") : std::to_string(max_trip)) + "; raise the cap with --max-loop-iterations)");
        iter.reset(DType::Int64, {});
        iter.mutable_as<int64_t>()[0] = i;
        cond_v.reset(DType::Bool, {});
        cond_v.mutable_as<uint8_t>()[0] = cond ? 1 : 0;
        std::vector<const Value*> in{&iter, &cond_v};
        for (auto& v : cur) in.push_back(&v);
        std::vector<Value> out = body->run(ctx, in);
        cond = scalar_bool(ctx, out[0], "the body's cond output");
        for (size_t k = 0; k < N; ++k) cur[k] = std::move(out[1 + k]);
        for (size_t k = 0; k < K; ++k) parts[k].push_back(std::move(out[1 + N + k]));
      }
      for (size_t k = 0; k < N; ++k) put(ctx, k, cur[k]);
      for (size_t k = 0; k < K; ++k) {
        if (!ctx.has_output(N + k)) continue;
        Value stacked;
        stack(ctx, parts[k], 0, stacked, DType::Float);
        put(ctx, N + k, stacked);
      }
    });
  }, false);

  r.add("Scan", [](const KernelInit& init) {
    auto b = bodies(init);
    if (!b.count("body")) init.fail("needs a body");
    auto body = b["body"];
    ScanAttrs at;
    at.v8 = init.opset < 9;
    at.num_scan_inputs = init.attrs().get_int("num_scan_inputs", 0);
    at.in_axes = init.attrs().get_ints("scan_input_axes");
    at.in_dirs = init.attrs().get_ints(at.v8 ? "directions" : "scan_input_directions");
    at.out_axes = init.attrs().get_ints("scan_output_axes");
    at.out_dirs = init.attrs().get_ints("scan_output_directions");
    const size_t declared = declared_inputs(init) - (at.v8 ? 1 : 0);
    if (at.num_scan_inputs < 1 || static_cast<size_t>(at.num_scan_inputs) > declared) init.fail("num_scan_inputs is out of range");
    const size_t M = static_cast<size_t>(at.num_scan_inputs), N = declared - M;
    if (!at.in_axes.empty() && at.in_axes.size() != M) init.fail("scan_input_axes needs one value per scan input");
    if (!at.in_dirs.empty() && at.in_dirs.size() != M) init.fail("scan input directions need one value per scan input");
    if (body->own_inputs() != N + M) init.fail("the body takes " + std::to_string(body->own_inputs()) + " inputs, the node gives " + std::to_string(N + M));
    if (body->outputs() < N) init.fail("the body has too few outputs");
    return make_kernel([body, at, N, M](KernelContext& ctx) {
      const size_t first = at.v8 ? 1 : 0;
      std::vector<const Value*> states, xs;
      for (size_t i = 0; i < N; ++i) states.push_back(&ctx.in(first + i));
      for (size_t j = 0; j < M; ++j) xs.push_back(&ctx.in(first + N + j));
      if (!at.v8) {
        std::vector<Value> finals, scans;
        int64_t steps = 0;
        scan_once(ctx, *body, at, states, xs, finals, scans, steps);
        for (size_t i = 0; i < N; ++i) put(ctx, i, finals[i]);
        for (size_t k = 0; k < scans.size(); ++k) put(ctx, N + k, scans[k]);
        return;
      }
      // Opset 8: a leading batch axis on every input; the sequence axis is 1.
      if (ctx.has_input(0)) ctx.fail("sequence_lens is not supported (all sequences must be full length)");
      int64_t batch = -1;
      for (const Value* v : states) {
        if (v->rank() < 1) ctx.fail("opset 8 Scan inputs need a batch axis");
        batch = v->dims()[0];
      }
      for (const Value* v : xs) {
        if (v->rank() < 2) ctx.fail("opset 8 Scan inputs need batch and sequence axes");
        if (batch >= 0 && v->dims()[0] != batch) ctx.fail("Scan inputs differ in batch size");
        batch = v->dims()[0];
      }
      for (const Value* v : states)
        if (v->dims()[0] != batch) ctx.fail("Scan inputs differ in batch size");
      std::vector<std::vector<Value>> fin(N), sc;
      ScanAttrs per = at;
      per.in_axes.clear();
      std::vector<Value> sv(N), xv(M);
      int64_t steps = 0;  // over all batch rows, against the cap
      for (int64_t bi = 0; bi < batch; ++bi) {
        std::vector<const Value*> s, x;
        for (size_t i = 0; i < N; ++i) {
          take(*states[i], 0, bi, sv[i]);
          s.push_back(&sv[i]);
        }
        for (size_t j = 0; j < M; ++j) {
          take(*xs[j], 0, bi, xv[j]);
          x.push_back(&xv[j]);
        }
        std::vector<Value> finals, scans;
        scan_once(ctx, *body, per, s, x, finals, scans, steps);
        if (sc.empty()) sc.resize(scans.size());
        for (size_t i = 0; i < N; ++i) fin[i].push_back(std::move(finals[i]));
        for (size_t k = 0; k < scans.size(); ++k) sc[k].push_back(std::move(scans[k]));
      }
      for (size_t i = 0; i < N; ++i) {
        Value v;
        stack(ctx, fin[i], 0, v, DType::Float);
        put(ctx, i, v);
      }
      for (size_t k = 0; k < sc.size(); ++k) {
        Value v;
        stack(ctx, sc[k], 0, v, DType::Float);
        put(ctx, N + k, v);
      }
    });
  }, false);
}

}  // namespace nnxr::runtime
