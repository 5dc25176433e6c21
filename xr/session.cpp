#include "xr/session.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/quaternion.hpp>

#include "engine/device.h"
#include "engine/frame_times.h"
#include "engine/memory.h"
#include "engine/mirror.h"
#include "engine/overlay.h"
#include "engine/renderer.h"
#include "engine/scene_buffers.h"
#include "engine/vk.h"
#include "xr/feedback.h"
#include "xr/gestures.h"
#include "xr/handles.h"
#include "xr/input.h"
#include "xr/placement.h"
#include "xr/runtime.h"
#include "xr/swapchains.h"

namespace nnxr::xr {
namespace {

using namespace engine;

constexpr uint32_t kFramesInFlight = 2;
constexpr float kNear = 0.05f, kFar = 200.0f;
// The layout the renderer expects its depth target in (engine/vk.h transition_image()); valid for
// the depth-only formats used here because engine/device.h's device_create_info(), from which the
// runtime creates the device, enables separateDepthStencilLayouts.
constexpr VkImageLayout kDepthLayout = VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL;
// How often xrGetSystem is asked whether the headset is back after a session loss.
constexpr auto kSystemPollInterval = std::chrono::milliseconds(100);

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

const char* state_name(XrSessionState s) {
  switch (s) {
    case XR_SESSION_STATE_IDLE: return "IDLE";
    case XR_SESSION_STATE_READY: return "READY";
    case XR_SESSION_STATE_SYNCHRONIZED: return "SYNCHRONIZED";
    case XR_SESSION_STATE_VISIBLE: return "VISIBLE";
    case XR_SESSION_STATE_FOCUSED: return "FOCUSED";
    case XR_SESSION_STATE_STOPPING: return "STOPPING";
    case XR_SESSION_STATE_LOSS_PENDING: return "LOSS_PENDING";
    case XR_SESSION_STATE_EXITING: return "EXITING";
    default: return "UNKNOWN";
  }
}

glm::vec3 to_glm(const XrVector3f& v) { return {v.x, v.y, v.z}; }
glm::quat to_glm(const XrQuaternionf& q) { return {q.w, q.x, q.y, q.z}; }

// Eye → Vulkan clip for an OpenXR field of view (asymmetric; Y down; depth 0..1).
glm::mat4 projection(const XrFovf& fov) {
  const float l = std::tan(fov.angleLeft), r = std::tan(fov.angleRight);
  const float u = std::tan(fov.angleUp), d = std::tan(fov.angleDown);
  const float w = r - l, h = d - u;  // h < 0: flips Y for Vulkan
  glm::mat4 p(0.0f);
  p[0][0] = 2.0f / w;
  p[1][1] = 2.0f / h;
  p[2][0] = (r + l) / w;
  p[2][1] = (u + d) / h;
  p[2][2] = -kFar / (kFar - kNear);
  p[2][3] = -1.0f;
  p[3][2] = -(kFar * kNear) / (kFar - kNear);
  return p;
}

glm::mat4 view_of(const XrPosef& pose) {
  const glm::mat4 eye = glm::translate(glm::mat4(1.0f), to_glm(pose.position)) * glm::mat4_cast(to_glm(pose.orientation));
  return glm::inverse(eye);
}

// Everything made for one session, in creation order (members destroy in reverse: action spaces
// and action set, swapchains, app space, session).
struct SessionObjects {
  SessionHandle session;
  SpaceHandle space;
  std::string space_name;  // "STAGE" or "LOCAL"
  std::optional<Swapchains> swapchains;
  std::optional<Input> input;
  XrSessionState state = XR_SESSION_STATE_UNKNOWN;
  bool running = false;       // between xrBeginSession and xrEndSession
  bool asked_exit = false;    // xrRequestExitSession was called
};

// The worker's sink: the viewer's current SceneBuffers. It is pointed at new ones only while the
// worker is idle (the headset came back on another GPU), so the worker keeps its model, its
// inference and its layout across the move.
class SinkRelay final : public scene::SceneSink, public WordsSink {
 public:
  SceneBuffers* target = nullptr;
  scene::ImageSink* image_sink() override { return target->image_sink(); }
  std::span<scene::Neuron> neurons(uint64_t count) override { return target->neurons(count); }
  std::span<scene::Connection> connections(uint64_t count) override { return target->connections(count); }
  void publish(std::span<const scene::Segment> segments, const scene::DrawCounts& counts, float max_contribution) override {
    target->publish(segments, counts, max_contribution);
  }
  void write_counts(const scene::DrawCounts& counts) override { target->write_counts(counts); }
  void publish_words(const WordsContext& context) override { target->publish_words(context); }
};

}  // namespace

struct XrViewer::Impl {
  ViewerOptions options;

  // Declared in the order they must outlive each other: members destroy in reverse, so a throw
  // part-way through the constructor frees the session objects, then the OpenXR instance, then
  // the Vulkan objects. ~Impl only stops the worker and waits for the device first.
  std::unique_ptr<Instance> vk_instance;
  std::unique_ptr<Device> device;
  std::unique_ptr<Mirror> mirror;  // desktop window showing the left eye (null: none)
  std::unique_ptr<SceneBuffers> scene;
  std::unique_ptr<Renderer> renderer;
  CommandPool pool;
  struct Slot {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    Fence done;
    uint64_t serial = 0;
  };
  std::array<Slot, kFramesInFlight> slots;
  SinkRelay sink;  // the worker's way to `scene`
  std::unique_ptr<Worker> worker;
  Interaction interaction;
  std::unique_ptr<ViewerState> state;
  std::unique_ptr<Runtime> runtime;     // the OpenXR instance
  XrSystemId system = XR_NULL_SYSTEM_ID;
  std::unique_ptr<SessionObjects> xs;   // null while the session is lost

  Gestures gestures;
  Pose head{glm::vec3(0, 1.6f, 0)};  // the last frame's head pose (the walk's origin)
  std::array<HandState, 2> hands{};  // this frame's controller state (for the feedback drawing)
  OverlayBuilder overlay;            // this frame's rays, gauges and panel; capacity kept
  WorldTransform world;  // the gesture tracker's copy of the network's transform
  bool placed = false;   // the network was put in front of the user
  bool want_place = false;  // a scene is in and the network waits to be placed
  bool located = false;  // the eyes' poses and fields of view have been located (head, eye_fov)
  EyeFov eye_fov;        // the narrower of the two eyes' half-angles on each side, last located
  glm::mat4 panel = panel_plane();  // the view's panels, canvas → world (placed with the network)
  // The filter menu on the left hand this frame: shown, its plane, the row the right ray points at.
  struct Menu {
    bool shown = false;
    glm::mat4 plane{1.0f};
    FilterMenu::Row hovered = FilterMenu::Row::None;
    size_t hovered_index = 0;  // the row's index (for the lit band)
    size_t op = 0;             // the op, for FilterMenu::Row::Op
    float hit_distance = 0;    // along the right aim ray
  } menu;

  bool done = false, mirror_closed = false;
  std::atomic<uint64_t> waited{0};
  uint64_t frame_index = 0, serial = 0;
  XrTime last_time = 0;
  std::chrono::steady_clock::time_point next_system_poll{};
  std::vector<std::string> states;
  uint32_t sessions = 0, losses = 0, gpu_moves = 0;
  DeviceOptions device_options;  // what the device was created with (again on a move)
  std::string space_name, profile;
  bool depth_layer = false;  // the last session's depth went to the compositor
  SwapchainFormats formats;  // the renderer's, chosen by the first session
  FrameTimes wait_to_end_ms;  // wall time from xrWaitFrame's return to xrEndFrame's, settled frames (bounded)

  explicit Impl(const ViewerOptions& o) : options(o) {
    runtime = std::make_unique<Runtime>();
    system = runtime->find_system();
    if (system == XR_NULL_SYSTEM_ID)
      throw NoHeadsetError("OpenXR runtime " + runtime->name() + " has no headset connected (XR_ERROR_FORM_FACTOR_UNAVAILABLE)");
    open_mirror();
    InstanceOptions io{.validation = options.validation};
    if (mirror) io.extensions = mirror->instance_extensions();
    if (mirror) device_options.extensions.push_back(Mirror::kDeviceExtension);
    VulkanObjects vk = runtime->create_vulkan(system, io, device_options);
    vk_instance = std::move(vk.instance);
    device = std::move(vk.device);
    if (mirror) attach_mirror();
    create_session(/*prepared=*/true);
    fit_budget(*device, options);
    create_device_objects();
    options.worker.words.menu = true;  // the left hand's filter menu
    worker = std::make_unique<Worker>(sink, options.worker);
    interaction.set_filter(options.filter, options.filter_tensors);
    state = std::make_unique<ViewerState>(*worker, interaction, *renderer);
  }

  ~Impl() {
    if (scene) scene->stop();
    worker.reset();
    if (device) {
      try {
        device->wait_idle();
      } catch (const std::exception& e) {
        std::cerr << "nnxr: " << e.what() << '\n';
      }
    }
    // The members go in reverse order: session objects, OpenXR instance, then Vulkan.
  }

  // ---- setup ----------------------------------------------------------------------------------

  // What the viewer keeps on its device: scene buffers, renderer, command buffers and fences.
  void create_device_objects() {
    scene = std::make_unique<SceneBuffers>(*device, SceneBufferConfig{.element_budget = options.worker.scene.budget,
                                                                      .frames_in_flight = kFramesInFlight});
    sink.target = scene.get();
    renderer = std::make_unique<Renderer>(*device, *scene, RendererConfig{.colour_format = formats.colour, .depth_format = formats.depth,
                                                                          .view_count = 2, .frames_in_flight = kFramesInFlight});
    pool = create_command_pool(device->get(), device->queue_family(), VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
    for (Slot& s : slots) {
      s.cmd = allocate_command_buffer(device->get(), pool.get());
      s.done = create_fence(device->get(), true);
      s.serial = 0;
    }
  }

  // The headset came back on another GPU (no session exists: it was lost). The worker finishes
  // what it does and stays with its model, inference and layout; the device and everything on
  // it are made again on `physical` (the renderer's formats kept), and the worker writes the
  // activation images and the scene into the new buffers from the kept model.
  void move_to_device(VkPhysicalDevice physical) {
    worker->wait_idle();  // nothing writes into the old buffers from here on
    device->wait_idle();
    if (serial) scene->retire(serial);
    scene->stop();
    for (Slot& s : slots) {
      s.done = {};
      s.cmd = VK_NULL_HANDLE;
      s.serial = 0;
    }
    pool = {};
    const bool had_mirror = mirror != nullptr;
    mirror.reset();  // its window swapchain belongs to the old device
    renderer.reset();
    sink.target = nullptr;
    scene.reset();
    const std::string old_name = device->name();
    device.reset();
    device = runtime->create_device(system, *vk_instance, physical, device_options);
    if (had_mirror) {
      open_mirror();
      if (mirror) attach_mirror();
    }
    create_device_objects();
    state->rebind(*renderer);
    worker->reinfer();
    ++gpu_moves;
    std::cerr << "nnxr: the headset is on another GPU now (" << device->name() << ", was " << old_name
              << "); the scene moves there without reloading the model\n";
  }

  // The mirror window opens before the Vulkan instance, which needs the window system's
  // extensions. No display, or a window system that refuses: no mirror, one line.
  void open_mirror() {
    if (!options.mirror) return;
    if (!display_available()) {
      std::cerr << "nnxr: no display (DISPLAY and WAYLAND_DISPLAY are unset); no desktop mirror\n";
      return;
    }
    try {
      mirror = std::make_unique<Mirror>(options.width, options.height, kFramesInFlight);
    } catch (const NoDisplayError& e) {
      std::cerr << "nnxr: " << e.what() << "; no desktop mirror\n";
    }
  }

  void attach_mirror() {
    try {
      mirror->attach(*vk_instance, *device);
    } catch (const std::exception& e) {  // NoDisplayError, VulkanError
      std::cerr << "nnxr: no desktop mirror: " << e.what() << '\n';
      mirror.reset();
    }
  }

  // A session on the viewer's device with its app space, swapchains and input. `prepared`: the
  // graphics requirements were just asked for (create_vulkan()).
  void create_session(bool prepared) {
    const XrInstance instance = runtime->get();
    if (!prepared && runtime->prepare_session(system, *vk_instance) != device->physical())
      throw std::runtime_error("the headset is on another GPU than the viewer's device");
    auto s = std::make_unique<SessionObjects>();
    XrGraphicsBindingVulkan2KHR binding{XR_TYPE_GRAPHICS_BINDING_VULKAN2_KHR};
    binding.instance = vk_instance->get();
    binding.physicalDevice = device->physical();
    binding.device = device->get();
    binding.queueFamilyIndex = device->queue_family();
    binding.queueIndex = 0;
    XrSessionCreateInfo ci{XR_TYPE_SESSION_CREATE_INFO};
    ci.next = &binding;
    ci.systemId = system;
    runtime->check(xrCreateSession(instance, &ci, s->session.out()), "xrCreateSession");

    uint32_t n = 0;
    runtime->check(xrEnumerateReferenceSpaces(s->session.get(), 0, &n, nullptr), "xrEnumerateReferenceSpaces");
    std::vector<XrReferenceSpaceType> types(n);
    runtime->check(xrEnumerateReferenceSpaces(s->session.get(), n, &n, types.data()), "xrEnumerateReferenceSpaces");
    types.resize(n);
    const bool stage = std::find(types.begin(), types.end(), XR_REFERENCE_SPACE_TYPE_STAGE) != types.end();
    s->space_name = stage ? "STAGE" : "LOCAL";
    if (!stage && s->space_name != space_name) std::cerr << "nnxr: the OpenXR runtime offers no STAGE space; using LOCAL\n";
    XrReferenceSpaceCreateInfo rs{XR_TYPE_REFERENCE_SPACE_CREATE_INFO};
    rs.referenceSpaceType = stage ? XR_REFERENCE_SPACE_TYPE_STAGE : XR_REFERENCE_SPACE_TYPE_LOCAL;
    rs.poseInReferenceSpace.orientation.w = 1;
    runtime->check(xrCreateReferenceSpace(s->session.get(), &rs, s->space.out()), "xrCreateReferenceSpace");

    // A rebuilt session keeps the renderer's formats.
    s->swapchains.emplace(instance, system, s->session.get(), *device, runtime->depth_extension(), mirror != nullptr, formats);
    formats = s->swapchains->formats();
    depth_layer = s->swapchains->depth_swapchain() != nullptr;
    s->input.emplace(instance, s->session.get());
    space_name = s->space_name;
    xs = std::move(s);
    ++sessions;
  }

  // The session is lost: wait for the device to finish the frames on its images, retire them,
  // destroy it and start asking for the headset.
  void lose_session(const std::string& why) {
    ++losses;
    std::cerr << "nnxr: the OpenXR session was lost (" << why << "); waiting for the headset to come back\n";
    device->wait_idle();
    if (serial) scene->retire(serial);
    xs.reset();
    gestures = Gestures{};
    hands = {};
    last_time = 0;
    next_system_poll = std::chrono::steady_clock::now() + kSystemPollInterval;
  }

  // While lost: xrGetSystem every kSystemPollInterval; a new session once the headset is back.
  void wait_for_system() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_system_poll) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(next_system_poll - now, std::chrono::milliseconds(10)));
      return;
    }
    next_system_poll = now + kSystemPollInterval;
    const XrSystemId s = runtime->find_system();
    if (s == XR_NULL_SYSTEM_ID) return;
    system = s;
    try {
      const VkPhysicalDevice gpu = runtime->prepare_session(system, *vk_instance);
      if (gpu != device->physical()) move_to_device(gpu);
      create_session(/*prepared=*/true);
    } catch (const SessionLostError&) {
      return;  // lost again while being made (its objects are gone with it): ask again later
    }
    std::cerr << "nnxr: the headset is back; new OpenXR session\n";
  }

  // ---- events ---------------------------------------------------------------------------------

  void poll_events() {
    const XrInstance instance = runtime->get();
    for (;;) {
      XrEventDataBuffer ev{XR_TYPE_EVENT_DATA_BUFFER};
      const XrResult r = runtime->check(xrPollEvent(instance, &ev), "xrPollEvent");
      if (r == XR_EVENT_UNAVAILABLE) return;
      if (ev.type == XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED) {
        const auto& e = reinterpret_cast<const XrEventDataSessionStateChanged&>(ev);
        if (!xs || e.session != xs->session.get()) continue;  // a session already destroyed
        xs->state = e.state;
        states.push_back(state_name(e.state));
        switch (e.state) {
          case XR_SESSION_STATE_READY: {
            XrSessionBeginInfo bi{XR_TYPE_SESSION_BEGIN_INFO};
            bi.primaryViewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
            runtime->check(xrBeginSession(xs->session.get(), &bi), "xrBeginSession");
            xs->running = true;
            break;
          }
          case XR_SESSION_STATE_STOPPING:
            runtime->check(xrEndSession(xs->session.get()), "xrEndSession");
            xs->running = false;
            break;
          case XR_SESSION_STATE_EXITING: done = true; break;
          case XR_SESSION_STATE_LOSS_PENDING: lose_session("LOSS_PENDING"); break;
          default: break;
        }
      } else if (ev.type == XR_TYPE_EVENT_DATA_INSTANCE_LOSS_PENDING) {
        std::cerr << "nnxr: the OpenXR runtime is going away; exiting\n";
        done = true;
      } else if (ev.type == XR_TYPE_EVENT_DATA_INTERACTION_PROFILE_CHANGED) {
        if (xs)
          if (std::string p = xs->input->right_profile(); !p.empty()) profile = p;
      }
    }
  }

  // ---- frames ---------------------------------------------------------------------------------

  // The network in front of the user once a scene is shown, and again on "reset": framed by the
  // rule of `render` and the desktop (xr/placement.h) for the head's last pose and the eyes'
  // field of view.
  void place_network() {
    const auto& corners = state->block_corners();
    world = xr::place_network(corners, head, eye_fov);
    panel = xr::place_board(corners, world, head);
    placed = true;
  }

  // The filter menu on the left hand (xr/feedback.h hand_menu), shown while it faces the eyes;
  // the right aim ray picks its rows.
  void place_menu() {
    menu = {};
    const HandState& left = hands[kLeft];
    if (!left.tracked || interaction.op_counts().empty()) return;
    const FilterMenu layout{interaction.op_counts().size()};
    const HandMenu m = hand_menu(left.grip, layout.size());
    if (!menu_faces(m, head.position)) return;
    menu.shown = true;
    menu.plane = m.plane;
    const HandState& pointer = hands[kRight];
    if (!pointer.tracked) return;
    const engine::Ray ray{pointer.aim.position, glm::normalize(pointer.aim.orientation * glm::vec3(0, 0, -1))};
    float t = 0;
    const auto canvas = menu_hit(m, ray, &t);
    if (!canvas) return;
    menu.hovered = layout.row(*canvas, &menu.op);
    if (menu.hovered != FilterMenu::Row::None) {
      menu.hovered_index = size_t((canvas->y - FilterMenu::kPad) / FilterMenu::kLine);
      menu.hit_distance = t;
    }
  }

  void interact(XrTime time) {
    hands = xs->input->read_hands(xs->space.get(), time);
    const double dt = last_time ? std::clamp(double(time - last_time) * 1e-9, 0.0, 0.1) : 0.0;
    last_time = time;
    GestureEvents ev = gestures.update(hands, dt, world);
    place_menu();
    // The right trigger on the menu presses the row it points at instead of selecting a neuron.
    Command pressed;
    if (ev.select && ev.select_hand == kRight && menu.hovered != FilterMenu::Row::None) {
      pressed = press_menu(interaction, menu.hovered, menu.op);
      ev.select.reset();
      ev.haptic_tick[kRight] = true;
    }
    if (ev.reset) place_network();
    interaction.set_world(world);
    bool filter = false;
    if (ev.neuron_steps) filter |= interaction.step_neuron_threshold(ev.neuron_steps);
    if (ev.connection_steps) filter |= interaction.step_connection_threshold(ev.connection_steps);
    if (ev.reset) {  // menu: the network back in front, thresholds and filters back to the start
      filter |= interaction.reset_filters();
      filter |= interaction.reset_thresholds();
      interaction.stop_walk();
    }
    if (ev.window_resize) filter |= interaction.resize_window(ev.window_resize);
    // A window step walks: the network slides so that the window's first layer stands an arm's
    // length ahead of the head (horizontally), unless a hand holds it.
    if (ev.window_steps && interaction.step_window(ev.window_steps)) {
      filter = true;
      glm::vec3 ahead = head.orientation * glm::vec3(0, 0, -1);
      ahead.y = 0;
      if (glm::length(ahead) < 1e-3f) ahead = glm::vec3(0, 0, -1);
      if (!gestures.grabbing(kLeft) && !gestures.grabbing(kRight))
        interaction.walk_to_window(head.position, glm::normalize(ahead), interaction.options().arm_length);
    }
    if (gestures.grabbing(kLeft) || gestures.grabbing(kRight)) interaction.stop_walk();
    interaction.advance(float(dt));
    world = interaction.world();
    for (int h = 0; h < 2; ++h)
      if (ev.haptic_tick[size_t(h)]) xs->input->haptic_tick(h);
    Command cmd;
    cmd.filter_changed = filter || pressed.filter_changed;
    cmd.select = ev.select;
    cmd.input_step = ev.input_step;
    cmd.compare_toggle = ev.compare_toggle;
    if (cmd.filter_changed || cmd.select || cmd.input_step || cmd.compare_toggle) state->apply(cmd);
    // The legend follows the tensor under the right hand's aim ray (throttled in ViewerState).
    if (const HandState& right = hands[kRight]; right.tracked)
      state->hover(engine::Ray{right.aim.position, glm::normalize(right.aim.orientation * glm::vec3(0.0f, 0.0f, -1.0f))});
  }

  void frame() {
    const XrSession session = xs->session.get();
    XrFrameWaitInfo wi{XR_TYPE_FRAME_WAIT_INFO};
    XrFrameState fs{XR_TYPE_FRAME_STATE};
    runtime->check(xrWaitFrame(session, &wi, &fs), "xrWaitFrame");
    waited.fetch_add(1, std::memory_order_relaxed);
    const auto wall_start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_ms();
    XrFrameBeginInfo bi{XR_TYPE_FRAME_BEGIN_INFO};
    runtime->check(xrBeginFrame(session, &bi), "xrBeginFrame");
    const uint64_t before = state->scene_generation();
    state->take_in(1.0f);
    if (state->scene_generation() != before && !placed) want_place = true;
    if (want_place && located) {
      place_network();
      want_place = false;
    }
    interact(fs.predictedDisplayTime);

    std::array<XrCompositionLayerProjectionView, 2> pv{};
    std::array<XrCompositionLayerDepthInfoKHR, 2> di{};
    XrCompositionLayerProjection layer{XR_TYPE_COMPOSITION_LAYER_PROJECTION};
    const XrCompositionLayerBaseHeader* layers[] = {reinterpret_cast<const XrCompositionLayerBaseHeader*>(&layer)};
    uint32_t layer_count = 0;
    uint64_t drawn_generation = 0;
    if (fs.shouldRender) {
      XrViewLocateInfo li{XR_TYPE_VIEW_LOCATE_INFO};
      li.viewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
      li.displayTime = fs.predictedDisplayTime;
      li.space = xs->space.get();
      XrViewState vs{XR_TYPE_VIEW_STATE};
      std::array<XrView, 2> xv{{{XR_TYPE_VIEW}, {XR_TYPE_VIEW}}};
      uint32_t n = 0;
      runtime->check(xrLocateViews(session, &li, &vs, 2, &n, xv.data()), "xrLocateViews");
      constexpr XrViewStateFlags valid = XR_VIEW_STATE_POSITION_VALID_BIT | XR_VIEW_STATE_ORIENTATION_VALID_BIT;
      if (n == 2 && (vs.viewStateFlags & valid) == valid) {
        locate(xv);
        drawn_generation = render(xv);
        const Swapchains& sc = *xs->swapchains;
        const VkExtent2D extent = sc.extent();
        for (uint32_t v = 0; v < 2; ++v) {
          pv[v] = {XR_TYPE_COMPOSITION_LAYER_PROJECTION_VIEW};
          pv[v].pose = xv[v].pose;
          pv[v].fov = xv[v].fov;
          pv[v].subImage.swapchain = sc.colour().handle.get();
          pv[v].subImage.imageRect = {{0, 0}, {int32_t(extent.width), int32_t(extent.height)}};
          pv[v].subImage.imageArrayIndex = v;
          if (const ArraySwapchain* depth = sc.depth_swapchain()) {
            di[v] = {XR_TYPE_COMPOSITION_LAYER_DEPTH_INFO_KHR};
            di[v].subImage = pv[v].subImage;
            di[v].subImage.swapchain = depth->handle.get();
            di[v].minDepth = 0.0f;
            di[v].maxDepth = 1.0f;
            di[v].nearZ = kNear;  // projection(): depth 0 at kNear, 1 at kFar
            di[v].farZ = kFar;
            pv[v].next = &di[v];
          }
        }
        layer.space = xs->space.get();
        layer.viewCount = 2;
        layer.views = pv.data();
        layer_count = 1;
      }
    }
    XrFrameEndInfo ei{XR_TYPE_FRAME_END_INFO};
    ei.displayTime = fs.predictedDisplayTime;
    ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
    ei.layerCount = layer_count;
    ei.layers = layer_count ? layers : nullptr;
    runtime->check(xrEndFrame(session, &ei), "xrEndFrame");
    if (layer_count) {
      state->frame_done(thread_cpu_ms() - cpu_start, drawn_generation);
      if (state->settled()) wait_to_end_ms.add(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start).count());
    }
    ++frame_index;
  }

  // The head between the eyes, looking as the left eye does, and the field of view both eyes hold.
  void locate(const std::array<XrView, 2>& xv) {
    head.position = 0.5f * (to_glm(xv[0].pose.position) + to_glm(xv[1].pose.position));
    head.orientation = to_glm(xv[0].pose.orientation);
    eye_fov = {std::max(xv[0].fov.angleLeft, xv[1].fov.angleLeft), std::min(xv[0].fov.angleRight, xv[1].fov.angleRight),
               std::min(xv[0].fov.angleUp, xv[1].fov.angleUp), std::max(xv[0].fov.angleDown, xv[1].fov.angleDown)};
    located = true;
  }

  // Renders both eyes into the acquired swapchain images; returns the scene generation drawn.
  uint64_t render(const std::array<XrView, 2>& xv) {
    const Swapchains& sc = *xs->swapchains;
    const XrSwapchain colour = sc.colour().handle.get();
    const ArraySwapchain* depth_sc = sc.depth_swapchain();
    const VkExtent2D extent = sc.extent();
    uint32_t image = 0;
    XrSwapchainImageAcquireInfo ai{XR_TYPE_SWAPCHAIN_IMAGE_ACQUIRE_INFO};
    runtime->check(xrAcquireSwapchainImage(colour, &ai, &image), "xrAcquireSwapchainImage");
    XrSwapchainImageWaitInfo wi{XR_TYPE_SWAPCHAIN_IMAGE_WAIT_INFO};
    wi.timeout = XR_INFINITE_DURATION;
    runtime->check(xrWaitSwapchainImage(colour, &wi), "xrWaitSwapchainImage");
    uint32_t depth_image = 0;
    if (depth_sc) {
      runtime->check(xrAcquireSwapchainImage(depth_sc->handle.get(), &ai, &depth_image), "xrAcquireSwapchainImage (depth)");
      runtime->check(xrWaitSwapchainImage(depth_sc->handle.get(), &wi), "xrWaitSwapchainImage (depth)");
    }

    Slot& slot = slots[frame_index % kFramesInFlight];
    VkFence fence = slot.done.get();
    engine::check(vkWaitForFences(device->get(), 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (slot.serial) scene->retire(slot.serial);  // also drops its fence's record (submitted())
    slot.serial = ++serial;
    const SceneFrame scene_frame = scene->acquire(slot.serial);

    FrameParams params = state->frame_params(1.0f);
    // No panels fixed to the eyes' corners (engine/renderer.h): the view's panels stand in the
    // room, the filter menu on the left hand.
    params.panels = PanelPlacement::Planes;
    params.panel_plane = panel;
    params.panel_canvas = kPanelCanvas;
    params.menu = menu.shown;
    params.menu_plane = menu.plane;
    if (menu.hovered != FilterMenu::Row::None && menu.hovered != FilterMenu::Row::Title) {
      const float top = FilterMenu{}.row_top(menu.hovered_index);
      params.menu_hover = {top, top + FilterMenu::kLine};
    }
    for (size_t v = 0; v < 2; ++v) {
      params.view[v] = view_of(xv[v].pose);
      params.projection[v] = projection(xv[v].fov);
    }
    // The left eye's view and the right controller's aim ray pick the focus (the head's gaze
    // when that hand is not tracked or points at the hand menu).
    std::optional<engine::Ray> aim;
    if (const HandState& right = hands[kRight]; right.tracked && menu.hovered == FilterMenu::Row::None)
      aim = engine::Ray{right.aim.position, glm::normalize(right.aim.orientation * glm::vec3(0.0f, 0.0f, -1.0f))};
    state->follow_view(params.view[0], params.projection[0], aim);
    overlay.clear();
    FeedbackInput feedback{.hands = hands,
                           .neuron_threshold = interaction.thresholds().neuron(),
                           .connection_threshold = interaction.thresholds().connection(),
                           .selection = interaction.selection() ? &*interaction.selection() : nullptr};
    feedback.head = head;  // locate() took it from these views
    if (menu.hovered != FilterMenu::Row::None) feedback.ray_length[kRight] = menu.hit_distance;
    build_feedback(feedback, overlay);
    params.overlay_lines = overlay.lines();
    params.overlay_triangles = overlay.triangles();
    const float extent_m = interaction.extent() * interaction.world().scale;
    params.fog_start = std::max(4.0f, extent_m);
    params.fog_end = std::max(40.0f, extent_m * 4);

    VkCommandBuffer cmd = slot.cmd;
    engine::check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    engine::check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    const VkImage colour_vk = sc.colour().images[image];
    transition_image(cmd, colour_vk, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    const VkImage depth_vk = depth_sc ? depth_sc->images[depth_image] : sc.private_depth().image.get();
    transition_image(cmd, depth_vk, VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED, kDepthLayout);
    const RenderTarget target{sc.colour().views[image].get(), depth_sc ? depth_sc->views[depth_image].get() : sc.private_depth().view.get(),
                              extent, /*store_depth=*/depth_sc != nullptr};
    renderer->record(cmd, target, scene_frame, params, static_cast<uint32_t>(frame_index % kFramesInFlight));
    // The left eye to the desktop mirror, when a window image is free (never waits for one).
    std::optional<Mirror::Blit> blit;
    if (mirror) {
      const float bg[3] = {params.background.r, params.background.g, params.background.b};
      blit = mirror->record(cmd, colour_vk, 0, extent, static_cast<uint32_t>(frame_index % kFramesInFlight), bg);
    }
    // The runtime takes depth swapchain images back in DEPTH_STENCIL_ATTACHMENT_OPTIMAL.
    if (depth_sc && kDepthLayout != VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
      transition_image(cmd, depth_vk, VK_IMAGE_ASPECT_DEPTH_BIT, kDepthLayout, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL);
    engine::check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    engine::check(vkResetFences(device->get(), 1, &fence), "vkResetFences");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    if (blit) {
      submit.waitSemaphoreCount = 1;
      submit.pWaitSemaphores = &blit->wait;
      submit.pWaitDstStageMask = &wait_stage;
      submit.signalSemaphoreCount = 1;
      submit.pSignalSemaphores = &blit->signal;
    }
    {
      std::lock_guard lock(device->queue_mutex());
      engine::check(vkQueueSubmit(device->queue(), 1, &submit, fence), "vkQueueSubmit");
      if (blit) mirror->present(*blit);
    }
    scene->submitted(slot.serial, fence);  // retired by retire_signalled() when nothing is drawn
    XrSwapchainImageReleaseInfo ri{XR_TYPE_SWAPCHAIN_IMAGE_RELEASE_INFO};
    runtime->check(xrReleaseSwapchainImage(colour, &ri), "xrReleaseSwapchainImage");
    if (depth_sc) runtime->check(xrReleaseSwapchainImage(depth_sc->handle.get(), &ri), "xrReleaseSwapchainImage (depth)");
    return scene_frame.generation;
  }

  void request_exit() {
    runtime->check(xrRequestExitSession(xs->session.get()), "xrRequestExitSession");
    xs->asked_exit = true;
  }

  // One pass of the loop: events, the mirror's window, retiring, then a frame when running.
  void step() {
    poll_events();
    if (done) return;
    // The mirror's window events (and its rebuild after a resize) come outside the frame timing.
    if (mirror && !mirror_closed && !mirror->poll()) mirror_closed = true;
    // Frames that finished on the GPU are retired on every pass, drawn or not, so that the
    // worker can publish while the headset shows nothing.
    scene->retire_signalled();
    if (!xs) {
      if (mirror_closed) {
        done = true;  // closed while waiting for the headset
        return;
      }
      wait_for_system();
      return;
    }
    if (mirror_closed && xs->running && !xs->asked_exit) request_exit();
    if (!xs->running) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    frame();
    if (options.max_frames && !xs->asked_exit && state->settled_frames() >= options.max_frames) request_exit();
  }

  void run() {
    while (!done) {
      try {
        step();
      } catch (const SessionLostError& e) {
        if (!xs) throw;  // not from a session call
        lose_session(e.what());
      }
    }
  }
};

XrViewer::XrViewer(const engine::ViewerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
XrViewer::~XrViewer() = default;

void XrViewer::load(engine::ModelSource model, engine::InputSource input) { impl_->worker->load(std::move(model), std::move(input)); }
void XrViewer::run() { impl_->run(); }
uint64_t XrViewer::frames_waited() const { return impl_->waited.load(std::memory_order_relaxed); }

XrStats XrViewer::stats() const {
  XrStats s;
  s.view = impl_->state->stats();
  s.view.validation_errors = impl_->vk_instance->validation_errors();
  s.session_states = impl_->states;
  s.sessions = impl_->sessions;
  s.session_losses = impl_->losses;
  s.gpu_moves = impl_->gpu_moves;
  s.scene_generation = impl_->state->scene_generation();
  s.runtime = impl_->runtime->name();
  s.space = impl_->space_name;
  s.profile = impl_->profile;
  s.depth_layer = impl_->depth_layer;
  s.board_top_left = glm::vec3(impl_->panel[3]);
  s.board_right = glm::normalize(glm::vec3(impl_->panel[0]));
  s.mirror = impl_->mirror != nullptr;
  if (impl_->mirror) {
    s.mirror_presented = impl_->mirror->presented();
    s.mirror_skipped = impl_->mirror->skipped();
  }
  s.wait_to_end_median_ms = impl_->wait_to_end_ms.percentile(0.5);
  s.wait_to_end_p99_ms = impl_->wait_to_end_ms.percentile(0.99);
  return s;
}

}  // namespace nnxr::xr
