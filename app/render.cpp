// `nnxr render [MODEL] --out FILE.png [--width W] [--height H] [--camera PRESET] [--input FILE]
//  [--random SEED] [--neuron-threshold Q] [--connection-threshold Q] [--budget N]
//  [--focus TENSOR[,TENSOR...]|all]`: runs the model, lays the network out, draws every activation
// as images, builds points and connections for the focus (by default the tensors nearest the
// camera and in view, up to 500,000 neurons) and renders it offscreen to a PNG (no window needed).
// The images are written during the run, each as its tensor is computed, and the run keeps only
// the activations read afterwards, so that its memory is the images' and the live tensors'.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "app/classes.h"
#include "app/commands.h"
#include "app/compare.h"
#include "app/filter_args.h"
#include "app/inputs.h"
#include "app/limits.h"
#include "model/file_io.h"
#include "engine/annotations.h"
#include "engine/camera.h"
#include "engine/device.h"
#include "engine/interaction.h"
#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"
#include "engine/viewer_state.h"
#include "model/runtime/runtime.h"
#include "model/scene/compare.h"
#include "model/scene/scene.h"
#include "model/scene/focus.h"
#include "model/scene/tiles.h"

namespace nnxr::app {
namespace {

float parse_quantile(Args& args, std::string_view name, float fallback) {
  auto text = args.option(name);
  if (!text) return fallback;
  char* end = nullptr;
  const float q = std::strtof(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !(q >= 0 && q <= 1))
    throw UsageError(std::string(name) + " takes a quantile between 0 and 1, got '" + *text + "'");
  return q;
}

// Progress on stderr for work that takes a while, only on a terminal: one status line per stage
// (with percentages for the scene build when it is slow), each overwriting the last, cleared
// when the command ends, so that an error or the result is the one line left.
class Progress {
 public:
  explicit Progress(std::streambuf* out) : out_(out), tty_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() { clear(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void stage(const std::string& what) {
    check_stop(what.c_str());
    stage_ = what;
    show(what);
    start_ = std::chrono::steady_clock::now();
    last_percent_ = -10;
  }
  void fraction(float f) {
    const int percent = int(f * 100);
    if (percent < last_percent_ + 10) return;
    if (std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    last_percent_ = percent;
    show(stage_ + " " + std::to_string(percent) + "%");
  }
  void clear() {
    if (tty_ && shown_) out_ << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  void show(const std::string& line) {
    if (!tty_) return;
    out_ << "\r\033[Krender: " << line << std::flush;
    shown_ = true;
  }
  std::ostream out_;
  bool tty_ = false;
  bool shown_ = false;
  std::string stage_;
  std::chrono::steady_clock::time_point start_;
  int last_percent_ = 0;
};

// What render says on std::cerr while it works (model warnings, input notes, "budget lowered",
// "most changed", the preprocessing note) is held and printed once the PNG is written, so that a
// render that fails prints its one error line and nothing else. The progress line (a terminal
// only) goes to the real stderr at once.
class HeldNotes {
 public:
  HeldNotes() : real_(std::cerr.rdbuf(held_.rdbuf())) {}
  ~HeldNotes() { std::cerr.rdbuf(real_); }  // an error: the held lines are dropped
  HeldNotes(const HeldNotes&) = delete;
  HeldNotes& operator=(const HeldNotes&) = delete;
  std::streambuf* real() const { return real_; }
  // Stops holding; `print`: writes what was held.
  void release(bool print) {
    std::cerr.rdbuf(real_);
    if (print) std::cerr << held_.str() << std::flush;
    held_.str({});
  }

 private:
  std::ostringstream held_;
  std::streambuf* real_;
};

// The activations render reads after the run, by TensorId: the focus's (its points, and what its
// connections are scored from: the inputs and outputs of the nodes computing it), the graph's
// outputs (prediction, detections, an output picture) and the last laid-out tensor (the legend
// without a prediction). Every one when there is no focus (the scene then builds every tensor).
std::vector<bool> kept_tensors(const model::Graph& g, const scene::Layout& layout, const std::vector<std::string>& focus) {
  std::vector<bool> keep(g.tensors.size(), focus.empty());
  auto add = [&](model::TensorId id) {
    if (id < keep.size()) keep[id] = true;
  };
  for (model::TensorId id : g.outputs) add(id);
  if (!layout.blocks().empty()) add(layout.blocks().back().tensor);
  for (const std::string& name : focus) {
    const model::TensorId id = g.find(name);
    add(id);
    if (id >= g.tensors.size() || g.tensors[id].producer >= g.nodes.size()) continue;
    const model::Node& node = g.nodes[g.tensors[id].producer];
    for (model::TensorId t : node.inputs) add(t);
    for (model::TensorId t : node.outputs) add(t);
  }
  return keep;
}

}  // namespace

int render_command(Args& args) {
  const auto out = args.option("--out");
  const uint32_t width = uint32_t(args.int_option("--width", 16, 16384).value_or(1600));
  const uint32_t height = uint32_t(args.int_option("--height", 16, 16384).value_or(900));
  const std::string camera_name = args.option("--camera").value_or("overview");
  const auto preset = engine::parse_camera_preset(camera_name);
  if (!preset)
    throw UsageError("unknown camera '" + camera_name + "' (choose one of " + engine::camera_preset_names() + ")");
  model::LoadOptions options;
  parse_dims(args, options);
  auto specs = parse_input_specs(args);
  const ImageOptions image = parse_image_options(args);
  const auto labels = parse_labels_option(args);
  const bool show_constants = args.flag("--show-constants");
  std::optional<uint32_t> seed;
  if (auto s = args.int_option("--random", 0, 0xffffffffLL)) seed = uint32_t(*s);
  // The view's defaults (engine/interaction.h).
  const engine::Thresholds defaults_q{engine::kDefaultNeuronRung, engine::kDefaultConnectionRung};
  const float neuron_q = parse_quantile(args, "--neuron-threshold", defaults_q.neuron());
  const float connection_q = parse_quantile(args, "--connection-threshold", defaults_q.connection());
  const uint64_t budget = uint64_t(args.int_option("--budget", 1, 1'000'000'000).value_or(20'000'000));
  const int threads = int(args.int_option("--threads", 0, 256).value_or(1));
  const FilterArgs filter_args = parse_filter_args(args);
  const std::optional<std::string> focus_arg = args.option("--focus");
  const auto compare = args.option("--compare");
  const auto show_text = args.option("--show");
  const Limits limits = parse_limits(args);
  auto pos = args.positionals();
  args.finish();
  if (show_text && !compare) throw UsageError("--show needs --compare FILE");
  const auto show = scene::parse_compare_show(show_text.value_or("diff"));
  if (!show) throw UsageError("--show takes a, b or diff, got '" + *show_text + "'");
  if (!out) throw UsageError("render needs --out FILE.png");
  // Before any work: a folder that does not exist or a target that is not a regular file.
  model::check_output_file(*out);
  install(limits);
  if (pos.size() > 1) throw UsageError("render takes one model, got '" + pos[0] + "' and '" + pos[1] + "'");
  const std::optional<std::string> model_path = pos.empty() ? std::nullopt : std::optional(pos[0]);
  add_default_input(model_path.has_value(), seed, specs);

  HeldNotes notes_held;
  Progress progress(notes_held.real());
  // Vulkan first: a machine without a device fails in milliseconds, before any inference.
  engine::Instance instance(engine::InstanceOptions{});
  engine::Device device(instance, engine::DeviceOptions{});
  progress.stage("Vulkan device " + device.name());

  auto [graph, inputs] = load_with_inputs(model_path, std::move(specs), options);
  print_warnings(graph);
  scene::Filter filter = resolve_filter(graph, filter_args);
  const auto feeds = inputs.resolve(graph, seed, image, /*quiet=*/false);

  progress.stage("running " + graph.source);
  auto plan = runtime::Plan::build(std::move(graph));
  const model::Graph& g = plan->graph();
  runtime::Session session(plan, {.threads = threads});
  for (const auto& [name, t] : feeds) session.set_input(name, t.dtype, t.shape, t.bytes);
  // The image input in its true colours in its tiles (not for a difference of two inputs).
  std::vector<scene::ImagePicture> tile_pictures;
  if (const auto pictures = inputs.image_inputs(); !pictures.empty() && !(compare && *show == scene::CompareShow::Difference)) {
    const Preprocessing pre = image_preprocessing(g, pictures.front(), image);
    tile_pictures.push_back({g.find(pictures.front()), {pre.scale, pre.mean, pre.std, pre.bgr}});
  }

  // The layout, then the camera, the focus and the scene buffers (view_and_buffers()).
  std::optional<scene::Layout> layout;
  engine::OverlayBuilder overlay;
  std::optional<engine::CompareSummary> summary;
  engine::Camera camera;
  std::vector<glm::vec3> frame_corners;  // what the camera frames (framed again clear of the panels)
  std::vector<std::string> focus;
  uint64_t resident = 1;
  std::optional<engine::SceneBuffers> buffers;
  const float aspect = float(width) / float(height);
  // A focus keeps each tensor's strongest connections only (a sketch, not a sheet over the
  // images); --focus all keeps every connection top-k gives, as without a focus.
  // Likewise its strongest points, so that one huge tensor is not kept whole.
  const bool capped = !(focus_arg && *focus_arg == "all");
  const uint64_t connection_cap = capped ? scene::kFocusConnectionsPerTensor : 0;
  const uint64_t point_cap = capped ? scene::kFocusPointsPerTensor : 0;
  auto view_and_buffers = [&] {
    // Frames the blocks the filter shows (all of them when it dims the rest or shows none).
    auto shown = [&](const scene::Block& b) {
      if (b.layer < filter.layer_min || b.layer > filter.layer_max) return false;
      const model::Tensor& t = g.tensors[b.tensor];
      const std::string op = t.producer == model::kNone ? std::string() : g.nodes[t.producer].op_type;
      if (!filter.op_types.empty() && std::find(filter.op_types.begin(), filter.op_types.end(), op) == filter.op_types.end())
        return false;
      return filter.tensors.empty() || std::find(filter.tensors.begin(), filter.tensors.end(), b.tensor) != filter.tensors.end();
    };
    const bool frame_shown = filter.outside == scene::Filter::Outside::Hide &&
                             std::any_of(layout->blocks().begin(), layout->blocks().end(), shown);
    std::vector<glm::vec3> corners;  // of every block: frames the network tighter than its bounds
    for (const scene::Block& b : layout->blocks())
      for (int i = 0; i < 8 && (!frame_shown || shown(b)); ++i)
        corners.push_back({(i & 1) ? b.max[0] : b.min[0], (i & 2) ? b.max[1] : b.min[1], (i & 4) ? b.max[2] : b.min[2]});
    // The group labels over a wrapped layout's first row, when the whole network is framed.
    if (!frame_shown || std::all_of(layout->blocks().begin(), layout->blocks().end(), shown))
      for (const glm::vec3& p : engine::words_to_frame(g, *layout)) corners.push_back(p);
    // Compare mode: the divergence curve and the most changed tensors above the network, framed too.
    if (summary && !summary->curve.empty()) {
      const auto lo = layout->bounds_min(), hi = layout->bounds_max();
      engine::draw_divergence(overlay, *summary, {lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}, glm::mat4(1.0f));
      for (const engine::OverlayVertex& v : overlay.lines()) corners.push_back(v.position);
      for (const engine::OverlayVertex& v : overlay.triangles()) corners.push_back(v.position);
    }
    camera = engine::frame_points(*preset, corners, aspect);
    frame_corners = corners;
    // Points and connections for the focus only: --focus, or the tensors nearest the camera and in
    // view up to kFocusPoints neurons (--focus all: every tensor, within the budget).
    constexpr uint64_t kFocusPoints = 500'000;
    if (focus_arg && *focus_arg != "all") {
      for (size_t from = 0; from <= focus_arg->size();) {
        const size_t comma = std::min(focus_arg->find(',', from), focus_arg->size());
        if (comma > from) focus.push_back(focus_arg->substr(from, comma - from));
        from = comma + 1;
      }
      for (const std::string& name : focus)
        if (std::none_of(g.tensors.begin(), g.tensors.end(), [&](const model::Tensor& t) { return t.name == name; }))
          throw UsageError("--focus: no tensor named '" + name + "'");
    } else if (!focus_arg) {
      const glm::mat4 view_projection = camera.projection(aspect) * camera.view();
      focus = scene::choose_focus(g, *layout, {camera.eye.x, camera.eye.y, camera.eye.z},
                                  [&](std::array<float, 3> p) {
                                    const glm::vec4 c = view_projection * glm::vec4(p[0], p[1], p[2], 1);
                                    return c.w > 0 && std::abs(c.x) <= c.w && std::abs(c.y) <= c.w;
                                  },
                                  kFocusPoints, scene::kFocusPointsPerTensor);
    }
    const uint64_t limit = engine::max_element_budget(device);
    const scene::SceneOptions defaults;
    resident = std::max<uint64_t>(
        1, std::min(budget, scene::focus_elements(g, *layout, focus, defaults.top_k, connection_cap, point_cap)));
    if (resident > limit) {
      std::cerr << "render: budget " << resident << " lowered to " << limit << ", the most " << device.name()
                << " can address\n";
      resident = limit;
    }
    // Buffers of that budget; reserve_scene_memory() may lower it after the run, leaving some of
    // them unwritten (host-visible pages are committed as they are written).
    buffers.emplace(device, engine::SceneBufferConfig{.element_budget = resident,
                                                      .max_segments = uint32_t(std::max<size_t>(g.tensors.size(), 1)),
                                                      .frames_in_flight = 1,
                                                      .image_regions = 1});
  };

  // Runs A; the exit code when the run was stopped. `report`: says when some ops have no kernel.
  auto run_a = [&](const runtime::RunOptions& options, bool report) -> std::optional<int> {
    try {
      session.run(options);
    } catch (const runtime::CancelledError& e) {
      progress.clear();
      notes_held.release(false);
      return report_cancelled(e);
    } catch (const runtime::UnsupportedError& e) {
      progress.clear();
      if (report) std::cerr << "nnxr: warning: " << e.what() << "; showing the tensors that were computed\n";
    }
    return std::nullopt;
  };

  // Without --compare all of that comes before the run (shapes are all it needs), and the run
  // writes each tensor's image as the node computing it finishes and lets go of every activation
  // that nothing read afterwards needs (the points and connections of the focus, the prediction,
  // the legend): the run then holds its live tensors and the images, not every activation at
  // once. Shapes the graph leaves to the run come from a first run that holds only its live
  // tensors and those.
  const bool streamed = !compare;
  std::optional<scene::ImageWriter> writer;
  std::vector<bool> keep;
  std::vector<std::vector<int64_t>> shapes;  // by TensorId: as run, for the labels of those let go
  runtime::NonFiniteScan non_finite(g);
  runtime::RunOptions run = run_options(limits);
  if (streamed) {
    if (scene::Layout::needs_run(g)) {
      std::vector<bool> unknown(g.tensors.size());
      for (size_t id = 0; id < g.tensors.size(); ++id) unknown[id] = !g.tensors[id].rank_known || !g.tensors[id].elements();
      runtime::RunOptions learn = run_options(limits);
      learn.keep = &unknown;
      if (const auto stopped = run_a(learn, false)) return *stopped;
      const scene::Activations learnt = scene::activations_of(session);
      layout.emplace(scene::Layout::build(g, {.constants = show_constants}, &learnt));
    } else {
      layout.emplace(scene::Layout::build(g, {.constants = show_constants}));
    }
    view_and_buffers();
    writer.emplace(*layout, buffers->images().image(scene::plan_images(*layout).bytes), tile_pictures);
    keep = kept_tensors(g, *layout, focus);
    shapes.resize(g.tensors.size());
    run.keep = &keep;
    run.on_ready = [&](model::TensorId id, const runtime::Value& v) {
      non_finite.count(id, v);
      const scene::TensorValue value = scene::tensor_value(v);
      writer->write(id, value);
      shapes[id].assign(value.shape.begin(), value.shape.end());
    };
  }
  if (const auto stopped = run_a(run, true)) return *stopped;
  if (streamed)
    for (const runtime::TensorView& t : session.tensors())
      if (t.node.empty()) non_finite.count(t.id, *t.value);  // the inputs and weights
  for (const std::string& line : streamed ? non_finite.report() : runtime::non_finite_report(session))
    std::cerr << "warning: " << g.source << ": " << line << '\n';

  // --compare: input B in a second session; the scene shows A, B or a_A − a_B (--show).
  std::optional<runtime::Session> session_b;
  std::vector<float> difference;
  if (compare) {
    const auto feeds_b = compare_feeds(*compare, g, feeds, image);
    progress.stage("running " + g.source + " on " + *compare);
    session_b.emplace(plan, runtime::SessionOptions{.threads = threads});
    for (const auto& [name, t] : feeds_b) session_b->set_input(name, t.dtype, t.shape, t.bytes);
    try {
      session_b->run(run_options(limits));
    } catch (const runtime::UnsupportedError& e) {
      std::cerr << "nnxr: warning: " << *compare << ": " << e.what() << "; showing the tensors that were computed\n";
    }
  }

  progress.stage("laying out and building the scene");
  scene::Activations values = scene::activations_of(session);
  for (size_t id = 0; id < shapes.size(); ++id)
    if (values[id].data.empty() && !shapes[id].empty()) values[id].shape = shapes[id];  // let go by the run
  scene::Activations ran_a, ran_b;  // drawing the difference: the two runs, for the panels
  if (!streamed) {
    layout.emplace(scene::Layout::build(g, {.constants = show_constants}, &values));  // shapes as run
    if (session_b) {
      const scene::Activations values_b = scene::activations_of(*session_b);
      std::string line;
      const auto div = scene::divergence(g, values, values_b);
      summary = engine::compare_summary(g, *layout, div);
      for (model::TensorId id : scene::most_changed(g, div, 5)) {
        char figure[48];
        std::snprintf(figure, sizeof figure, " (rel L2 %.3g)", div[id]->rel_l2);
        line += (line.empty() ? "" : ", ") + g.tensors[id].name + figure;
      }
      std::cerr << "render: most changed: " << line << '\n';
      if (*show == scene::CompareShow::B) values = values_b;
      if (*show == scene::CompareShow::Difference) {
        ran_a = values;
        ran_b = values_b;
        values = scene::difference(g, values, values_b, difference);
      }
    }
    view_and_buffers();
  }
  // The scene buffers and the build's arrays count against --max-memory beside the run's tensors.
  resident = reserve_scene_memory(resident, "render");
  scene::ImagesStats images;
  if (writer) {
    images = writer->finish(values, std::max(threads, 1));
    buffers->images().publish_image(images);
  } else {
    images = scene::publish_images(*layout, values, buffers->images(), std::max(threads, 1), tile_pictures);
  }
  scene::SceneOptions scene_options;
  scene_options.budget = resident;
  scene_options.focus = focus;
  scene_options.connections_per_tensor = connection_cap;
  scene_options.points_per_tensor = point_cap;
  scene_options.threads = std::max(threads, 1);
  scene_options.progress = [&](float f) { progress.fraction(f); };
  const scene::Scene scene = scene::Scene::build(g, *layout, values, scene_options, *buffers);
  filter.neuron_threshold = neuron_q;
  filter.connection_threshold = connection_q;
  scene::DrawCounts counts = scene.counts(filter);
  // The input drawn as a picture in its tiles has no colour-map points over it.
  scene::drop_points(counts, scene.segments(), scene::picture_tensors(*layout, values, tile_pictures));
  buffers->write_counts(counts);
  buffers->images().write_image_filter(scene::image_filter(g, *layout, filter));  // the images follow the op/tensor filter
  uint64_t shown_neurons = 0, shown_connections = 0;
  for (uint32_t n : counts.neurons) shown_neurons += n;
  for (uint32_t c : counts.connections) shown_connections += c;

  // The words: labels seen through the camera, title, prediction and legend.
  const ClassList classes = choose_classes(g, scene::class_count(g, values), labels);
  engine::AnnotationOptions notes;
  notes.words.title = std::filesystem::path(g.source).filename().string();  // as the view's (app/view.cpp)
  if (inputs.has_image()) {
    bool guessed = false;
    notes.words.notes.push_back(describe_preprocessing(g, image, guessed));
    std::cerr << "render: " << notes.words.notes.back() << '\n';
    if (guessed) notes.words.warnings.push_back("preprocessing guessed");
  }
  notes.words.class_names = classes.names;
  notes.words.class_list = classes.source;
  if (const auto random = inputs.random_inputs(g); !random.empty())
    notes.words.title += "  (random input, seed " + std::to_string(seed.value_or(42)) + ")";
  if (const auto pictures = inputs.image_inputs(); !pictures.empty()) {
    const Preprocessing pre = image_preprocessing(g, pictures.front(), image);
    notes.words.picture = engine::InputPicture{pictures.front(), {pre.scale, pre.mean, pre.std, pre.bgr}};
  }
  notes.viewport = {float(width), float(height)};
  notes.panels = width >= 640 && height >= 360;
  if (!ran_a.empty()) {
    notes.run_a = &ran_a;
    notes.run_b = &ran_b;
  }
  // The camera keeps the blocks clear of the panels drawn over the picture (where they are:
  // annotate() composes them, here without the labels' thinning, which needs the camera).
  if (notes.panels && !frame_corners.empty()) {
    engine::TextBuilder panels_only(engine::Font::builtin());
    const auto areas = engine::annotate(panels_only, g, *layout, values, notes);
    const auto rects = engine::panel_rects(areas, notes.viewport);
    // The input picture beside the network (a world billboard) is framed clear of them too.
    std::vector<glm::vec3> points = frame_corners;
    if (const auto billboard = engine::picture_billboard(g, *layout, values, notes.words))
      for (const glm::vec3& p : engine::picture_to_frame(*billboard)) points.push_back(p);
    camera = engine::frame_clear(*preset, points, notes.viewport, rects);
  }
  progress.stage("rendering " + std::to_string(width) + "x" + std::to_string(height));
  const engine::RendererConfig config{.frames_in_flight = 1};
  engine::Renderer renderer(device, *buffers, config);
  engine::Offscreen offscreen(device, config, {width, height});
  engine::FrameParams params;
  params.view[0] = camera.view();
  params.projection[0] = camera.projection(aspect);
  params.neuron_size = layout->options().neuron_spacing * 0.8f;
  params.min_neuron_pixels = 2.5f;
  params.connection_alpha = 0.35f;
  params.image_threshold = neuron_q;
  params.point_fade_pixels = 3;
  params.image_layer_min = filter.layer_min;
  params.image_layer_max = filter.layer_max;
  params.image_dim_outside = filter.outside == scene::Filter::Outside::Dim;
  const float distance = glm::length(camera.eye - camera.target);
  params.fog_start = distance;
  params.fog_end = distance * 4;
  params.overlay_lines = overlay.lines();
  params.overlay_triangles = overlay.triangles();
  notes.view_projection = params.projection[0] * params.view[0];
  engine::TextBuilder text(engine::Font::builtin());
  engine::annotate(text, g, *layout, values, notes);
  buffers->text().publish(text);
  const engine::RgbaImage picture = offscreen.render(renderer, *buffers, params);
  device.wait_idle();
  progress.clear();
  engine::write_png(*out, picture);
  notes_held.release(true);
  std::cout << "wrote " << *out << " (" << width << "x" << height << ", " << shown_neurons << " neurons, "
            << shown_connections << " connections shown";
  if (compare) std::cout << ", showing " << scene::compare_show_name(*show);
  std::cout << ")\n";
  std::cout << "activations_total " << images.activations_total << ", activations_shown " << images.activations_shown
            << ", points_resident " << scene.stats().neurons << ", connections_resident " << scene.stats().connections
            << '\n';
  return 0;
}

}  // namespace nnxr::app
