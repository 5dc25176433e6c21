// InMemorySink: a SceneSink over std::vectors, for tests and tools.
#include <stdexcept>
#include <string>

#include "model/scene/scene.h"

namespace nnxr::scene {

std::span<Neuron> InMemorySink::neurons(uint64_t count) {
  neuron_data.resize(size_t(count));  // the builder overwrites every element
  return neuron_data;
}

std::span<Connection> InMemorySink::connections(uint64_t count) {
  connection_data.resize(size_t(count));
  return connection_data;
}

void InMemorySink::publish(std::span<const Segment> published, const DrawCounts& first_counts, float max_abs) {
  if (first_counts.neurons.size() != published.size() || first_counts.connections.size() != published.size())
    throw std::runtime_error("in-memory sink: draw counts for " + std::to_string(first_counts.neurons.size()) +
                             " segments, published " + std::to_string(published.size()));
  segments.assign(published.begin(), published.end());
  counts = first_counts;
  max_contribution = max_abs;
  ++generation;
}

void InMemorySink::write_counts(const DrawCounts& new_counts) {
  if (new_counts.neurons.size() != segments.size() || new_counts.connections.size() != segments.size())
    throw std::runtime_error("in-memory sink: draw counts for " + std::to_string(new_counts.neurons.size()) +
                             " segments, the published scene has " + std::to_string(segments.size()));
  for (size_t i = 0; i < segments.size(); ++i)
    if (new_counts.neurons[i] > segments[i].neuron_count || new_counts.connections[i] > segments[i].connection_count)
      throw std::runtime_error("in-memory sink: draw counts of segment " + std::to_string(i) + " exceed its elements");
  counts = new_counts;
}

}  // namespace nnxr::scene
