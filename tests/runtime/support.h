// Helpers for the runtime tests: build a session from ONNX text, feed and read float tensors.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/load.h"
#include "model/runtime/runtime.h"

namespace nnxr::runtime::test {

inline std::shared_ptr<const Plan> plan_from_text(std::string_view text) {
  return Plan::build(model::load_model_from_text(text));
}

template <class T>
void feed(Session& s, std::string_view name, model::DType t, std::vector<int64_t> shape, const std::vector<T>& v) {
  s.set_input(name, t, shape, std::as_bytes(std::span(v.data(), v.size())));
}
inline void feed_f(Session& s, std::string_view name, std::vector<int64_t> shape, const std::vector<float>& v) {
  feed(s, name, model::DType::Float, std::move(shape), v);
}
inline void feed_i64(Session& s, std::string_view name, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  feed(s, name, model::DType::Int64, std::move(shape), v);
}

template <class T>
std::vector<T> values(const Session& s, std::string_view name) {
  const Value* v = s.find(name);
  if (!v) {
    ADD_FAILURE() << "no value for " << name;
    return {};
  }
  auto sp = v->as<T>();
  return {sp.begin(), sp.end()};
}
inline std::vector<int64_t> shape_of(const Session& s, std::string_view name) {
  const Value* v = s.find(name);
  if (!v) return {-999};
  return v->dims();
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs `text` with one float input X and returns Y (float).
inline std::vector<float> run1(std::string_view text, std::vector<int64_t> shape, const std::vector<float>& x, std::string_view out = "Y") {
  Session s(plan_from_text(text));
  feed_f(s, "X", std::move(shape), x);
  s.run();
  return values<float>(s, out);
}

}  // namespace nnxr::runtime::test
