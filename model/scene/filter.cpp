// Scene accessors and filters: a filter resolves to one prefix length per segment.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>

#include "model/scene/scene_impl.h"

namespace nnxr::scene {

Scene::Scene() : impl_(std::make_unique<Impl>()) {}
Scene::~Scene() = default;
Scene::Scene(Scene&&) noexcept = default;
Scene& Scene::operator=(Scene&&) noexcept = default;

const std::vector<Segment>& Scene::segments() const { return impl_->segments; }
const BuildStats& Scene::stats() const { return impl_->stats; }
float Scene::max_contribution() const { return impl_->max_contribution; }

namespace {

// Quantile q keeps the strongest n − round(q·n) of n.
uint32_t quantile_count(uint32_t n, float q) {
  const double qq = std::isnan(q) ? 0.0 : std::clamp(double(q), 0.0, 1.0);
  return n - uint32_t(std::min<double>(n, std::round(qq * double(n))));
}

}  // namespace

DrawCounts Scene::counts(const Filter& filter) const {
  const Impl& im = *impl_;
  DrawCounts out;
  out.neurons.assign(im.segments.size(), 0);
  out.connections.assign(im.segments.size(), 0);
  const bool dim = filter.outside == Filter::Outside::Dim;
  if (dim) out.dimmed.assign(im.segments.size(), 0);
  std::vector<model::TensorId> tensors = filter.tensors;
  std::sort(tensors.begin(), tensors.end());
  const float neuron_t = std::isnan(filter.neuron_threshold) ? 0.f : filter.neuron_threshold;
  const uint16_t connection_key = score_key(std::isnan(filter.connection_threshold) ? 0.f : filter.connection_threshold);
  for (size_t i = 0; i < im.segments.size(); ++i) {
    const Segment& s = im.segments[i];
    const SegmentData& d = im.data[i];
    const bool inside =
        s.layer >= filter.layer_min && s.layer <= filter.layer_max &&
        (filter.op_types.empty() ||
         std::find(filter.op_types.begin(), filter.op_types.end(), d.op_type) != filter.op_types.end()) &&
        (tensors.empty() || std::binary_search(tensors.begin(), tensors.end(), s.tensor));
    if (!inside) {
      if (!dim) continue;
      out.dimmed[i] = 1;
    }
    if (filter.neuron_mode == Filter::Mode::Quantile) {
      out.neurons[i] = quantile_count(s.neuron_count, filter.neuron_threshold);
    } else {
      const auto end = std::partition_point(d.values.begin(), d.values.end(), [&](float v) { return std::fabs(v) >= neuron_t; });
      out.neurons[i] = uint32_t(end - d.values.begin());
    }
    if (filter.connection_mode == Filter::Mode::Quantile) {
      out.connections[i] = quantile_count(s.connection_count, filter.connection_threshold);
    } else {
      const auto end = std::partition_point(d.connection_runs.begin(), d.connection_runs.end(),
                                            [&](const KeyRun& run) { return run.key >= connection_key; });
      out.connections[i] = end == d.connection_runs.begin() ? 0 : std::prev(end)->end;
    }
  }
  return out;
}

size_t Scene::Impl::segment_of_neuron(uint32_t index) const {
  auto it = std::upper_bound(segments.begin(), segments.end(), index,
                             [](uint32_t v, const Segment& s) { return v < s.neuron_first; });
  while (it != segments.begin()) {
    --it;
    if (index < uint64_t(it->neuron_first) + it->neuron_count) return size_t(it - segments.begin());
    if (it->neuron_count > 0) break;
  }
  throw std::out_of_range("scene: no neuron " + std::to_string(index));
}

NeuronInfo Scene::neuron(uint32_t index) const {
  const size_t i = impl_->segment_of_neuron(index);
  const Segment& s = impl_->segments[i];
  const uint32_t r = index - s.neuron_first;
  return {index, s.tensor, int64_t(impl_->data[i].order[r]), impl_->data[i].values[r]};
}

std::optional<uint32_t> Scene::find(model::TensorId tensor, int64_t element) const {
  if (tensor >= impl_->segment_of.size() || impl_->segment_of[tensor] < 0) return std::nullopt;
  const size_t i = size_t(impl_->segment_of[tensor]);
  const Segment& s = impl_->segments[i];
  if (element < 0 || element >= s.neuron_total) return std::nullopt;
  const uint32_t r = impl_->data[i].rank[size_t(element)];
  if (r >= s.neuron_count) return std::nullopt;
  return s.neuron_first + r;
}

}  // namespace nnxr::scene
