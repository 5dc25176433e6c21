// Loss ops (opset 12+): NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, float32.
//
//   input/scores [N, C] or [N, C, d1, ..., dk]; target/labels [N] or [N, d1, ..., dk] (int32/64);
//   optional weight [C]. Element (n, d): loss = -weight[t] * logp[n, t, d] with t = target[n, d]
//   (weight 1 when absent); a target equal to ignore_index gives loss 0 and weight 0.
//   reduction "none": the per-element losses [N, d1, ..., dk]; "sum": their sum; "mean" (default):
//   their sum divided by the sum of the weights taken (of the elements not ignored).
// SoftmaxCrossEntropyLoss takes logp = log_softmax(scores) along axis 1 and can output it.
#include <cmath>
#include <limits>
#include <optional>

#include "model/runtime/kernel.h"

namespace nnxr::runtime {
namespace {

enum class Reduction { None, Sum, Mean };

Reduction reduction_of(const KernelInit& init) {
  const std::string r = init.attrs().get_string("reduction", "mean");
  if (r == "none") return Reduction::None;
  if (r == "sum") return Reduction::Sum;
  if (r == "mean") return Reduction::Mean;
  init.fail("reduction '" + r + "' is not one of none, sum, mean");
}

int64_t label_at(const Value& t, int64_t i) {
  return t.dtype() == DType::Int64 ? t.as<int64_t>()[static_cast<size_t>(i)] : t.as<int32_t>()[static_cast<size_t>(i)];
}

// The negative log-likelihood of `logp` ([N, C, inner...]) at the labels in input `target_slot`,
// written to output 0.
void nll(KernelContext& ctx, const float* logp, const Shape& shape, size_t target_slot, size_t weight_slot,
         Reduction reduction, std::optional<int64_t> ignore_index) {
  const Value& target = ctx.in(target_slot);
  ctx.expect_dtype(target_slot, {DType::Int64, DType::Int32});
  if (shape.size() < 2) ctx.fail("input " + ctx.input_name(0) + " has shape " + shape_str(shape) + "; it needs [N, C, ...]");
  const int64_t N = shape[0], C = shape[1];
  Shape want{N};
  want.insert(want.end(), shape.begin() + 2, shape.end());
  if (target.dims() != want)
    ctx.fail("target " + ctx.input_name(target_slot) + " has shape " + shape_str(target.dims()) + ", expected " + shape_str(want));
  const Value* weight = ctx.opt(weight_slot);
  if (weight) {
    ctx.expect_dtype(weight_slot, {DType::Float});
    if (weight->dims() != Shape{C}) ctx.fail("weight " + ctx.input_name(weight_slot) + " has shape " + shape_str(weight->dims()) + ", expected [" + std::to_string(C) + "]");
  }
  const int64_t inner = product(std::span<const int64_t>(shape).subspan(2));
  std::vector<float> loss(static_cast<size_t>(N * inner));
  double total = 0, weights = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t e = n * inner + i, t = label_at(target, e);
      if (ignore_index && t == *ignore_index) continue;  // loss 0, weight 0
      if (t < 0 || t >= C)
        ctx.fail("target " + ctx.input_name(target_slot) + " element " + std::to_string(e) + " is " + std::to_string(t) +
                 ", outside [0, " + std::to_string(C) + ")");
      const float w = weight ? weight->as<float>()[static_cast<size_t>(t)] : 1.f;
      loss[static_cast<size_t>(e)] = -w * logp[(n * C + t) * inner + i];
      total += loss[static_cast<size_t>(e)];
      weights += w;
    }
  Value& y = ctx.out(0);
  if (reduction == Reduction::None) {
    y.reset(DType::Float, want);
    std::copy(loss.begin(), loss.end(), y.mutable_as<float>().begin());
    return;
  }
  y.reset(DType::Float, {});
  y.mutable_as<float>()[0] = static_cast<float>(reduction == Reduction::Sum ? total : total / weights);
}

std::optional<int64_t> ignore_index_of(const KernelInit& init) {
  if (!init.attrs().find("ignore_index")) return std::nullopt;
  return init.attrs().get_int("ignore_index", 0);
}

}  // namespace

void register_loss(Registry& r) {
  r.add("NegativeLogLikelihoodLoss", [](const KernelInit& init) {
    const Reduction reduction = reduction_of(init);
    const auto ignore = ignore_index_of(init);
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      const Value& x = ctx.in(0);
      nll(ctx, x.as<float>().data(), x.dims(), 1, 2, reduction, ignore);
    });
  });
  r.add("SoftmaxCrossEntropyLoss", [](const KernelInit& init) {
    const Reduction reduction = reduction_of(init);
    const auto ignore = ignore_index_of(init);
    return make_kernel([=](KernelContext& ctx) {
      ctx.expect_dtype(0, {DType::Float});
      const Value& x = ctx.in(0);
      if (x.rank() < 2) ctx.fail("scores " + ctx.input_name(0) + " has shape " + shape_str(x.dims()) + "; it needs [N, C, ...]");
      // log_softmax along axis 1, in double for each (n, inner) line.
      const int64_t N = x.dims()[0], C = x.dims()[1], inner = product(std::span<const int64_t>(x.dims()).subspan(2));
      std::vector<float> logp(static_cast<size_t>(x.elements()));
      const float* px = x.as<float>().data();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const float* line = px + n * C * inner + i;
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t c = 0; c < C; ++c) mx = std::max(mx, static_cast<double>(line[c * inner]));
          double sum = 0;
          for (int64_t c = 0; c < C; ++c) sum += std::exp(static_cast<double>(line[c * inner]) - mx);
          const double lse = mx + std::log(sum);
          for (int64_t c = 0; c < C; ++c) logp[static_cast<size_t>((n * C + c) * inner + i)] = static_cast<float>(line[c * inner] - lse);
        }
      nll(ctx, logp.data(), x.dims(), 1, 2, reduction, ignore);
      if (ctx.has_output(1)) {
        Value& lp = ctx.out(1);
        lp.reset(DType::Float, x.dims());
        std::copy(logp.begin(), logp.end(), lp.mutable_as<float>().begin());
      }
    });
  });
}

}  // namespace nnxr::runtime
