// `nnxr view [MODEL] [--input FILE | --random SEED] [--xr | --desktop] [--budget N]
//            [--frames N --stats] [--width W --height H] [--out FILE.png] [--threads N]
//            [--focus TENSOR[,TENSOR...]|all]`:
// the viewer. A headset when an OpenXR runtime with an HMD is there (--xr: required), else the
// desktop window (--desktop: required), else offscreen to a PNG.
//
// --focus: points and connections for these tensors only (all: every tensor, within the budget);
// by default they follow the view: the tensors nearest the eye in view, the one under the gaze
// and the selection, re-chosen by the worker as the viewer moves. The images show every
// activation in every case.
//
// --frames N: exit after N frames. In a window, the frames are counted once the model's scene is
// shown (or loading failed); frames drawn while it loads come on top (frames_total). Without a
// display, N offscreen frames are drawn after the worker has finished, and the last one is
// written to --out (default nnxr-view.png); in a window, --out saves the last of the N frames.
// --stats prints one JSON line on stdout at exit, and nothing else goes to stdout (messages,
// selections included, go to stderr). cpu_ms is the frame thread's CPU time per frame, wall_ms
// the frame's wall time (on a CPU rasteriser most of a frame's cost is not the frame thread's).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include "app/classes.h"
#include "app/commands.h"
#include "app/compare.h"
#include "app/filter_args.h"
#include "app/inputs.h"
#include "app/json.h"
#include "app/limits.h"
#include "assets/assets.h"
#include "engine/annotations.h"
#include "engine/desktop.h"
#include "model/scene/focus.h"
#include "xr/session.h"

namespace nnxr::app {
namespace {

bool is_image_file(const std::string& f) {
  return f.ends_with(".png") || f.ends_with(".jpg") || f.ends_with(".jpeg") || f.ends_with(".bmp");
}

// What the view shows as its input, for its words (title, preprocessing, picture): set by each
// input source once its files are read (worker thread), so that a dropped file or a switch to
// another input of the list changes the title, and one that cannot be read leaves it as it was.
struct ShownInput {
  std::mutex mutex;
  std::string name;     // "cat.png", "random input, seed 42"; "" for the default model's digit
  std::string picture;  // the graph input fed by an image file ("": the first, when `image`)
  bool image = false;   // an image file (or the embedded digit) feeds it
  std::optional<std::string> listed;  // the input stepped through (split_input_list); set before any input runs

  // From the specs an input source resolved: the stepped input's file names it, else the first
  // image file, else the first file, else the seed.
  void set(std::vector<InputSpec> specs, std::optional<uint32_t> seed) {
    std::lock_guard lock(mutex);
    name.clear(), picture.clear();
    image = false;
    if (listed)
      std::stable_partition(specs.begin(), specs.end(), [&](const InputSpec& s) { return s.name == *listed; });
    for (const InputSpec& s : specs)
      if (s.embedded || is_image_file(s.file)) {
        image = true, picture = s.name;
        name = s.embedded ? std::string() : std::filesystem::path(s.file).filename().string();
        return;
      }
    if (!specs.empty()) name = std::filesystem::path(specs.front().file).filename().string();
    else name = "random input, seed " + std::to_string(seed.value_or(42));
  }
};

// The model and input sources for the worker. Both run on the worker thread, one after the
// other; `inputs` passes the parsed input files from the first to the second.
struct Sources {
  engine::ModelSource model;
  engine::InputSource input;
};

Sources make_sources(const std::optional<std::string>& path, std::vector<InputSpec> specs, std::optional<uint32_t> seed,
                     ImageOptions image, model::LoadOptions options, std::shared_ptr<ShownInput> shown) {
  if (!path && specs.empty() && !seed)  // the default model shows a sample digit
    specs.push_back({.name = "", .file = "digit-3.png (embedded)", .embedded = assets::default_input().bytes});
  auto inputs = std::make_shared<std::optional<InputSet>>();
  Sources s;
  s.model.name = path ? std::filesystem::path(*path).filename().string() : "digits (embedded)";
  s.model.load = [path, specs, options, inputs]() mutable {
    model::Graph graph = load_model_arg(path, options, /*quiet=*/true);
    std::vector<std::string> names;
    for (auto id : graph.inputs) names.push_back(graph.tensors[id].name);
    inputs->emplace(specs, names);
    const size_t before = options.input_shapes.size();
    (*inputs)->add_shapes(options);
    if (options.input_shapes.size() != before) graph = load_model_arg(path, options, /*quiet=*/true);
    print_warnings(graph);
    return graph;
  };
  s.input = [inputs, seed, image, shown, specs](const model::Graph& graph) {
    engine::Feeds feeds;
    for (auto& [name, t] : (*inputs)->resolve(graph, seed, image, /*quiet=*/false)) feeds[name] = std::move(t);
    if (shown) shown->set(specs, seed);
    return feeds;
  };
  return s;
}

// The feeds of `specs` (files read on the worker thread, when the input is switched to).
// `shown` (may be null: compare's B) learns what it is once read.
engine::InputSource input_from(std::vector<InputSpec> specs, std::optional<uint32_t> seed, const ImageOptions& image,
                               std::shared_ptr<ShownInput> shown = nullptr) {
  return [specs = std::move(specs), seed, image, shown](const model::Graph& graph) {
    std::vector<std::string> names;
    for (auto id : graph.inputs) names.push_back(graph.tensors[id].name);
    InputSet set(specs, names);
    engine::Feeds feeds;
    for (auto& [name, t] : set.resolve(graph, seed, image, /*quiet=*/true)) feeds[name] = std::move(t);
    if (shown) shown->set(specs, seed);
    return feeds;
  };
}

// Several inputs to step through: the specs sharing one input (unnamed: the first) when there are
// two or more of them; the other specs go with each. Returns the specs the model loads with (the
// first of the list) and fills `list`.
std::vector<InputSpec> split_input_list(std::vector<InputSpec> specs, std::optional<uint32_t> seed, const ImageOptions& image,
                                        engine::InputList& list, std::shared_ptr<ShownInput> shown) {
  std::map<std::string, int> per_name;
  for (const InputSpec& s : specs) ++per_name[s.name];
  std::string listed;
  int lists = 0;
  for (const auto& [name, n] : per_name)
    if (n > 1) listed = name, ++lists;
  if (lists == 0) {
    for (const InputSpec& s : specs)
      if (s.name.empty()) list.names = {s.embedded ? s.file : std::filesystem::path(s.file).filename().string()};
    return specs;
  }
  if (lists > 1) throw UsageError("view steps through several files of one input only; give the others once each");
  std::vector<InputSpec> fixed, alternatives;
  for (InputSpec& s : specs) (s.name == listed ? alternatives : fixed).push_back(std::move(s));
  for (const InputSpec& s : alternatives) list.names.push_back(std::filesystem::path(s.file).filename().string());
  shown->listed = listed;
  list.source = [fixed, alternatives, seed, image, shown](size_t i) {
    std::vector<InputSpec> chosen = fixed;
    chosen.push_back(alternatives.at(i));
    return input_from(std::move(chosen), seed, image, shown);
  };
  fixed.push_back(alternatives.front());
  std::cerr << "nnxr: " << alternatives.size() << " inputs (left/right arrows, X/Y on the left controller)\n";
  return fixed;
}

// An input image (or .npy/.pb) dropped on the window, for the current model's first input.
engine::InputSource dropped_input(const std::string& file, const ImageOptions& image, std::shared_ptr<ShownInput> shown) {
  return [file, image, shown](const model::Graph& graph) {
    std::vector<std::string> names;
    for (auto id : graph.inputs) names.push_back(graph.tensors[id].name);
    const std::vector<InputSpec> specs{InputSpec{.name = "", .file = file}};
    InputSet set(specs, names);
    engine::Feeds feeds;
    for (auto& [name, t] : set.resolve(graph, std::nullopt, image, /*quiet=*/false)) feeds[name] = std::move(t);
    shown->set(specs, std::nullopt);
    return feeds;
  };
}

void print_stats(const engine::ViewStats& s, const char* mode, const xr::XrStats* xr_stats = nullptr) {
  JsonWriter j(std::cout);
  j.begin_object().field("mode", mode).field("model", s.model);
  j.field("frames", s.frames).field("frames_total", s.frames_total);
  j.key("cpu_ms").begin_object().field("median", s.cpu_median_ms).field("p99", s.cpu_p99_ms).end_object();
  j.key("wall_ms").begin_object().field("median", s.wall_median_ms).field("p99", s.wall_p99_ms).end_object();
  j.field("first_frame_ms", s.first_frame_ms).field("first_scene_ms", s.first_scene_ms);
  j.field("activations_total", s.activations_total).field("activations_shown", s.activations_shown);
  j.field("points_resident", s.resident_neurons).field("connections_resident", s.resident_connections);
  j.field("focus_tensors", uint64_t(s.focus.size()));
  j.key("focus").begin_array();  // their names (empty: every tensor)
  for (const std::string& name : s.focus) j.value(name);
  j.end_array();
  j.key("resident").begin_object().field("neurons", s.resident_neurons).field("connections", s.resident_connections).end_object();
  j.key("drawn").begin_object().field("neurons", s.drawn_neurons).field("connections", s.drawn_connections).end_object();
  j.key("world").begin_object();
  j.key("translation").begin_array().value(double(s.world.translation.x)).value(double(s.world.translation.y)).value(double(s.world.translation.z)).end_array();
  j.key("rotation").begin_array();  // w, x, y, z
  j.value(double(s.world.rotation.w)).value(double(s.world.rotation.x)).value(double(s.world.rotation.y)).value(double(s.world.rotation.z));
  j.end_array().field("scale", double(s.world.scale)).end_object();
  j.key("thresholds").begin_object().field("neuron", double(s.neuron_threshold)).field("connection", double(s.connection_threshold)).end_object();
  j.key("filter").begin_object().field("layer_min", s.filter.layer_min).field("layer_max", s.filter.layer_max);
  j.key("ops").begin_array();
  for (const std::string& op : s.filter.ops) j.value(op);
  j.end_array().key("tensors").begin_array();
  for (const std::string& t : s.filter.tensors) j.value(t);
  j.end_array().field("mode", s.filter.mode).end_object();
  j.key("selected");
  if (s.selection) {
    j.begin_object().field("tensor", s.selection->tensor_name).field("node", s.selection->node_name).field("op", s.selection->op_type);
    j.key("index").begin_array();
    for (int64_t i : s.selection->index) j.value(i);
    j.end_array().field("value", double(s.selection->value)).end_object();
  } else {
    j.null();
  }
  j.key("input").begin_object().field("index", static_cast<uint64_t>(s.input_index)).field("count", static_cast<uint64_t>(s.input_count));
  j.field("file", s.input_file).end_object();
  j.field("input_switch_ms", s.input_switch_ms).field("input_switches", s.input_switches);
  if (!s.compare_show.empty()) {
    j.key("compare").begin_object().field("show", s.compare_show).field("flip_ms", s.compare_flip_ms);
    j.field("flips", s.compare_flips).end_object();
  }
  j.key("errors").begin_array();
  for (const std::string& e : s.errors) j.value(e);
  j.end_array().field("validation_errors", s.validation_errors);
  if (xr_stats) {
    j.key("wait_to_end_ms").begin_object().field("median", xr_stats->wait_to_end_median_ms).field("p99", xr_stats->wait_to_end_p99_ms).end_object();
    j.field("runtime", xr_stats->runtime).field("space", xr_stats->space).field("profile", xr_stats->profile);
    j.field("depth_layer", xr_stats->depth_layer);
    const glm::vec3 tl = xr_stats->board_top_left, br = xr_stats->board_right;
    j.key("board_top_left").begin_array().value(double(tl.x)).value(double(tl.y)).value(double(tl.z)).end_array();
    j.key("board_right").begin_array().value(double(br.x)).value(double(br.y)).value(double(br.z)).end_array();
    j.key("mirror");
    if (xr_stats->mirror)
      j.begin_object().field("presented", xr_stats->mirror_presented).field("skipped", xr_stats->mirror_skipped).end_object();
    else
      j.null();
    j.key("session_states").begin_array();
    for (const std::string& st : xr_stats->session_states) j.value(st);
    j.end_array();
    j.field("sessions", uint64_t{xr_stats->sessions}).field("session_losses", uint64_t{xr_stats->session_losses});
    j.field("gpu_moves", uint64_t{xr_stats->gpu_moves});
    j.field("scene_generation", xr_stats->scene_generation);
  }
  j.end_object();  // ends the line
  std::cout << std::flush;
}

}  // namespace

int view_command(Args& args) {
  const bool xr = args.flag("--xr");
  const bool desktop = args.flag("--desktop");
  const bool stats = args.flag("--stats");
  model::LoadOptions load_options;
  parse_dims(args, load_options);
  auto specs = parse_input_specs(args);
  const ImageOptions image = parse_image_options(args);
  const auto labels = parse_labels_option(args);
  const bool show_constants = args.flag("--show-constants");
  std::optional<uint32_t> seed;
  if (auto s = args.int_option("--random", 0, 0xffffffffLL)) seed = static_cast<uint32_t>(*s);
  const auto compare = args.option("--compare");
  const auto show_text = args.option("--show");
  engine::ViewerOptions options;
  options.worker.layout.constants = show_constants;
  const auto budget = args.int_option("--budget", 1, 1'000'000'000);
  options.worker.scene.budget = static_cast<uint64_t>(budget.value_or(2'000'000));
  options.budget_explicit = budget.has_value();
  if (const auto focus = args.option("--focus"); focus && *focus != "all") {
    for (size_t from = 0; from <= focus->size();) {
      const size_t comma = std::min(focus->find(',', from), focus->size());
      if (comma > from) options.worker.scene.focus.push_back(focus->substr(from, comma - from));
      from = comma + 1;
    }
    if (options.worker.scene.focus.empty()) throw UsageError("--focus takes tensor names or all");
  } else {
    options.worker.follow_view = !focus;  // --focus all: every tensor, as before
  }
  // A focus keeps each tensor's strongest connections (a sketch, not a sheet over the images).
  if (options.worker.follow_view || !options.worker.scene.focus.empty()) {
    options.worker.scene.connections_per_tensor = scene::kFocusConnectionsPerTensor;
    options.worker.scene.points_per_tensor = scene::kFocusPointsPerTensor;  // one huge tensor is not kept whole
  }
  options.worker.threads = static_cast<int>(args.int_option("--threads", 1, 256).value_or(2));
  const auto frames = args.int_option("--frames", 1, 100'000'000);
  options.max_frames = static_cast<uint64_t>(frames.value_or(0));
  options.width = static_cast<uint32_t>(args.int_option("--width", 16, 8192).value_or(1280));
  options.height = static_cast<uint32_t>(args.int_option("--height", 16, 8192).value_or(720));
  options.validation = args.flag("--validation");
  options.mirror = !args.flag("--no-mirror");
  const FilterArgs filter_args = parse_filter_args(args);
  const auto out_option = args.option("--out");
  const std::string out = out_option.value_or("nnxr-view.png");
  if (out_option) options.final_screenshot = *out_option;
  // The memory ceiling applies to the worker's runs too; Ctrl-C exits within a second.
  const Limits limits = parse_limits(args);
  auto pos = args.positionals();
  args.finish();
  install(limits);
  options.worker.run = run_options(limits);  // the worker's inferences stop at the limits and on Ctrl-C
  // The scene buffers count against the memory ceiling too (--budget 1e9 would need 48 GB).
  // Half of it at most: the inferences that come later need the rest.
  options.worker.scene.budget = reserve_scene_memory(options.worker.scene.budget, "view", 0.5);
  if (pos.size() > 1) throw UsageError("view takes one model, got '" + pos[0] + "' and '" + pos[1] + "'");
  if (xr && desktop) throw UsageError("--xr and --desktop exclude each other");
  if (stats && !frames) throw UsageError("--stats needs --frames N");
  if (show_text && !compare) throw UsageError("--show needs --compare FILE");
  const auto show = scene::parse_compare_show(show_text.value_or("diff"));
  if (!show) throw UsageError("--show takes a, b or diff, got '" + *show_text + "'");
  const std::optional<std::string> path = pos.empty() ? std::nullopt : std::optional(pos[0]);
  // What is shown as the input, as the input sources learn it (a dropped file, another input of
  // the list).
  const auto shown = std::make_shared<ShownInput>();
  specs = split_input_list(expand_input_directories(std::move(specs)), seed, image, options.worker.inputs, shown);
  // The home view and the headset frame the words over a wrapped layout as render does.
  options.worker.frame_words = [](const model::Graph& g, const scene::Layout& layout) {
    std::vector<std::array<float, 3>> out;
    for (const glm::vec3& p : engine::words_to_frame(g, layout)) out.push_back({p.x, p.y, p.z});
    return out;
  };
  // The view's words: the model's name and what its input is (a file, or random with its seed),
  // the preprocessing in effect, the class names and the input picture; composed again for each
  // input.
  options.worker.words.complete = [labels, image, shown](const model::Graph& g, int64_t classes, engine::ViewWords& w) {
    std::string name, picture_input;
    bool picture = false;
    {
      std::lock_guard lock(shown->mutex);
      name = shown->name, picture_input = shown->picture, picture = shown->image;
    }
    w.title = std::filesystem::path(g.source).filename().string();
    if (!name.empty()) w.title += "  (" + name + ")";
    const ClassList list = choose_classes(g, classes, labels);
    w.class_names = list.names;
    w.class_list = list.source;
    w.notes.clear(), w.warnings.clear(), w.picture.reset();
    const std::string input = !picture_input.empty() ? picture_input : g.inputs.empty() ? std::string() : g.tensors[g.inputs[0]].name;
    if (picture && !input.empty()) {
      bool guessed = false;
      w.notes = {describe_preprocessing(g, image, guessed)};
      if (guessed) w.warnings = {"preprocessing guessed"};
      const Preprocessing pre = image_preprocessing(g, input, image);
      w.picture = engine::InputPicture{input, {pre.scale, pre.mean, pre.std, pre.bgr}};
    }
  };
  if (compare) {
    // B: the compared file for its input (unnamed: the first), the other inputs as A has them.
    const InputSpec b = parse_input_argument(*compare, "--compare");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(b.file, ec)) throw model::ModelError("--compare " + b.file + ": no such file");
    std::vector<InputSpec> b_specs;
    bool first_unnamed = true;
    for (const InputSpec& s : specs) {
      if (s.name.empty() && b.name.empty() && first_unnamed) {
        first_unnamed = false;
        continue;
      }
      if (!b.name.empty() && s.name == b.name) continue;
      b_specs.push_back(s);
    }
    b_specs.insert(b_specs.begin(), b);
    options.worker.compare.b = input_from(std::move(b_specs), seed.value_or(42), image);
    options.worker.compare.show->store(*show);
  }
  if (filter_args.any()) {  // names and layers are checked against the model before anything opens
    const model::Graph graph = load_model_arg(path, load_options, /*quiet=*/true);
    options.filter = resolve_filter(graph, filter_args);
    options.filter_tensors = filter_args.tensors;
  } else {
    options.filter.outside = filter_args.outside;
  }
  Sources sources = make_sources(path, std::move(specs), seed, image, load_options, shown);

  if (!desktop) {
    std::unique_ptr<xr::XrViewer> viewer;
    try {
      viewer = std::make_unique<xr::XrViewer>(options);
    } catch (const xr::NoHeadsetError& e) {
      if (xr) throw std::runtime_error(std::string("--xr: ") + e.what());
      std::cerr << "nnxr: not using a headset: " << e.what() << '\n';
    }
    if (viewer) {
      const xr::XrStats first = viewer->stats();
      std::cerr << "nnxr: headset via " << first.runtime << " (" << first.space << " space)\n";
      viewer->load(std::move(sources.model), std::move(sources.input));
      viewer->run();
      const xr::XrStats s = viewer->stats();
      viewer.reset();
      if (stats) print_stats(s.view, "xr", &s);
      return s.view.errors.empty() || s.view.resident_neurons > 0 ? 0 : 1;
    }
  }

  std::string why_headless = "no display (DISPLAY and WAYLAND_DISPLAY are unset)";
  if (engine::display_available()) {
    std::unique_ptr<engine::DesktopViewer> viewer;
    try {
      viewer = std::make_unique<engine::DesktopViewer>(options);
    } catch (const engine::NoDisplayError& e) {
      why_headless = e.what();
    }
    if (viewer) {
      viewer->load(std::move(sources.model), std::move(sources.input));
      engine::Worker& worker = viewer->worker();
      viewer->on_drop([&worker, image, shown](const std::vector<std::string>& files) {
        std::cerr << "nnxr: input " << files[0] << '\n';
        worker.set_input(dropped_input(files[0], image, shown));
      });
      viewer->run();
      const engine::ViewStats s = viewer->stats();
      viewer.reset();
      if (stats) print_stats(s, "desktop");
      return s.errors.empty() || s.resident_neurons > 0 ? 0 : 1;
    }
  }

  if (desktop) throw std::runtime_error("--desktop: cannot open a window: " + why_headless);
  std::cerr << "nnxr: " << why_headless << "; rendering offscreen to " << out << '\n';
  engine::OffscreenViewer viewer(options);
  viewer.load(std::move(sources.model), std::move(sources.input));
  viewer.run();
  viewer.write_png(out);
  std::cerr << "nnxr: wrote " << out << '\n';
  const engine::ViewStats s = viewer.stats();
  if (stats) print_stats(s, "offscreen");
  return s.errors.empty() || s.resident_neurons > 0 ? 0 : 1;
}

}  // namespace nnxr::app
