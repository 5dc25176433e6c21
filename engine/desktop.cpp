#include "engine/desktop.h"

#include <vulkan/vulkan.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <time.h>

#include <array>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "engine/device.h"
#include "engine/glfw_window.h"
#include "engine/offscreen.h"
#include "engine/renderer.h"
#include "engine/search_overlay.h"
#include "engine/scene_buffers.h"
#include "engine/swapchain.h"

namespace nnxr::engine {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kFramesInFlight = 2;
constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}


Key key_of(int glfw_key) {
  switch (glfw_key) {
    case GLFW_KEY_W: return Key::W;
    case GLFW_KEY_A: return Key::A;
    case GLFW_KEY_S: return Key::S;
    case GLFW_KEY_D: return Key::D;
    case GLFW_KEY_Q: return Key::Q;
    case GLFW_KEY_E: return Key::E;
    case GLFW_KEY_LEFT_SHIFT:
    case GLFW_KEY_RIGHT_SHIFT: return Key::Shift;
    case GLFW_KEY_R: return Key::R;
    case GLFW_KEY_LEFT_BRACKET: return Key::LeftBracket;
    case GLFW_KEY_RIGHT_BRACKET: return Key::RightBracket;
    case GLFW_KEY_COMMA: return Key::Comma;
    case GLFW_KEY_PERIOD: return Key::Period;
    case GLFW_KEY_F12: return Key::F12;
    case GLFW_KEY_ESCAPE: return Key::Escape;
    case GLFW_KEY_PAGE_UP: return Key::PageUp;
    case GLFW_KEY_PAGE_DOWN: return Key::PageDown;
    case GLFW_KEY_HOME: return Key::Home;
    case GLFW_KEY_END: return Key::End;
    case GLFW_KEY_SLASH:
    case GLFW_KEY_KP_DIVIDE: return Key::Slash;
    case GLFW_KEY_ENTER:
    case GLFW_KEY_KP_ENTER: return Key::Enter;
    case GLFW_KEY_BACKSPACE: return Key::Backspace;
    case GLFW_KEY_UP: return Key::Up;
    case GLFW_KEY_DOWN: return Key::Down;
    case GLFW_KEY_LEFT: return Key::Left;
    case GLFW_KEY_RIGHT: return Key::Right;
    case GLFW_KEY_C: return Key::C;
    default: return Key::Other;
  }
}

Press press_of(int action) {
  return action == GLFW_PRESS ? Press::Down : action == GLFW_RELEASE ? Press::Up : Press::Repeat;
}

bool present_filter(VkPhysicalDevice physical, uint32_t family, void* user) {
  VkBool32 supported = VK_FALSE;
  vkGetPhysicalDeviceSurfaceSupportKHR(physical, family, static_cast<VkSurfaceKHR>(user), &supported);
  return supported == VK_TRUE;
}

SceneBufferConfig buffer_config(const ViewerOptions& options) {
  SceneBufferConfig c;
  c.element_budget = options.worker.scene.budget;
  c.frames_in_flight = kFramesInFlight;
  return c;
}

}  // namespace

// Lowers the element budget to what one buffer and allocation of the device can hold, and on a
// CPU device to the software budget unless the user chose one.
void fit_budget(const Device& device, ViewerOptions& options) {
  uint64_t& budget = options.worker.scene.budget;
  const uint64_t device_max = max_element_budget(device);
  if (budget > device_max) {
    budget = device_max;
    std::cerr << "nnxr: " << device.name() << " holds at most " << device_max
              << " elements per allocation: element budget " << budget << '\n';
  }
  if (options.budget_explicit || device.properties().deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU ||
      budget <= options.software_budget)
    return;
  budget = options.software_budget;
  std::cerr << "nnxr: " << device.name() << " renders on the CPU: element budget " << budget
            << " (--budget N to change)\n";
}

bool display_available() {
  const char* x = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

// ---- DesktopViewer ------------------------------------------------------------------------------

struct DesktopViewer::Impl {
  struct FrameSlot {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    Fence done;
    Semaphore acquired;
    uint64_t serial = 0;           // scene frame serial last submitted in this slot
    std::string screenshot_path;   // set: the slot's image was copied to `readback`
  };

  ViewerOptions options;
  // Member order is destruction order in reverse: the worker goes first, the window last.
  GlfwLibrary glfw;
  Window window;
  Instance instance;
  Surface surface;
  std::unique_ptr<Device> device;
  std::unique_ptr<SceneBuffers> scene;
  std::unique_ptr<Swapchain> swapchain;
  std::unique_ptr<Renderer> renderer;
  CommandPool pool;
  std::array<FrameSlot, kFramesInFlight> slots;
  MappedBuffer readback;
  std::unique_ptr<Worker> worker;
  Interaction interaction;
  DesktopControls controls{interaction};
  std::unique_ptr<ViewerState> state;
  OverlayBuilder overlay;

  uint64_t frame_index = 0;
  uint64_t serial = 0;
  bool resized = false;
  std::string pending_screenshot;
  std::function<void(const std::vector<std::string>&)> drop_handler;
  std::string last_screenshot;
  int screenshot_count = 0;
  Clock::time_point last_frame = Clock::now();
  Clock::time_point last_title = Clock::time_point{};

  explicit Impl(const ViewerOptions& o)
      : options(o),
        window(o.width, o.height, o.visible),
        instance(InstanceOptions{.validation = o.validation, .extensions = glfw_instance_extensions()}) {
    VkSurfaceKHR s = VK_NULL_HANDLE;
    check(glfwCreateWindowSurface(instance.get(), window.get(), nullptr, &s), "glfwCreateWindowSurface");
    surface = Surface(instance.get(), s);
    DeviceOptions d;
    d.extensions = {VK_KHR_SWAPCHAIN_EXTENSION_NAME};
    d.queue_filter = present_filter;
    d.queue_filter_user = surface.get();
    device = std::make_unique<Device>(instance, d);
    fit_budget(*device, options);
    scene = std::make_unique<SceneBuffers>(*device, buffer_config(options));
    swapchain = std::make_unique<Swapchain>(*device, surface.get(), framebuffer_extent(),
                                            SwapchainOptions{.vsync = o.vsync, .depth_format = kDepthFormat});
    renderer = std::make_unique<Renderer>(*device, *scene, renderer_config());
    pool = create_command_pool(device->get(), device->queue_family(), VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
    for (FrameSlot& slot : slots) {
      slot.cmd = allocate_command_buffer(device->get(), pool.get());
      slot.done = create_fence(device->get(), true);
      slot.acquired = create_semaphore(device->get());
    }
    options.worker.words.menu = true;  // the filter menu, clicked with the mouse
    worker = std::make_unique<Worker>(*scene, options.worker);
    interaction.set_filter(options.filter, options.filter_tensors);
    state = std::make_unique<ViewerState>(*worker, interaction, *renderer);
    state->set_print_selection(false);  // the selection panel in the window shows it
    install_callbacks();
  }

  ~Impl() {
    // The worker may wait in the scene buffers for frames to retire: release it, stop it, then
    // let the GPU finish before anything it reads is destroyed.
    scene->stop();
    worker.reset();
    try {
      device->wait_idle();
    } catch (const std::exception& e) {
      std::cerr << "nnxr: " << e.what() << '\n';
    }
  }

  RendererConfig renderer_config() const {
    return {.colour_format = swapchain->format(), .depth_format = kDepthFormat, .view_count = 1, .frames_in_flight = kFramesInFlight};
  }

  VkExtent2D framebuffer_extent() const {
    int w = 0, h = 0;
    glfwGetFramebufferSize(window.get(), &w, &h);
    return {static_cast<uint32_t>(std::max(w, 0)), static_cast<uint32_t>(std::max(h, 0))};
  }

  float aspect() const {
    const VkExtent2D e = swapchain->extent();
    return e.height ? static_cast<float>(e.width) / static_cast<float>(e.height) : 1.0f;
  }

  void install_callbacks() {
    GLFWwindow* w = window.get();
    glfwSetWindowUserPointer(w, this);
    glfwSetKeyCallback(w, [](GLFWwindow* win, int key, int, int action, int) {
      static_cast<Impl*>(glfwGetWindowUserPointer(win))->on_key(key_of(key), press_of(action));
    });
    glfwSetCharCallback(w, [](GLFWwindow* win, unsigned int codepoint) {
      static_cast<Impl*>(glfwGetWindowUserPointer(win))->controls.character(codepoint);
    });
    glfwSetMouseButtonCallback(w, [](GLFWwindow* win, int button, int action, int) {
      double x = 0, y = 0;
      glfwGetCursorPos(win, &x, &y);
      const Button b = button == GLFW_MOUSE_BUTTON_LEFT ? Button::Left : button == GLFW_MOUSE_BUTTON_RIGHT ? Button::Right : Button::Other;
      static_cast<Impl*>(glfwGetWindowUserPointer(win))->on_button(b, press_of(action), static_cast<float>(x), static_cast<float>(y));
    });
    glfwSetCursorPosCallback(w, [](GLFWwindow* win, double x, double y) {
      static_cast<Impl*>(glfwGetWindowUserPointer(win))->controls.cursor(static_cast<float>(x), static_cast<float>(y));
    });
    glfwSetCursorEnterCallback(w, [](GLFWwindow* win, int entered) {
      if (!entered) static_cast<Impl*>(glfwGetWindowUserPointer(win))->controls.cursor_left();
    });
    glfwSetScrollCallback(w, [](GLFWwindow* win, double, double dy) {
      double x = 0, y = 0;
      glfwGetCursorPos(win, &x, &y);
      static_cast<Impl*>(glfwGetWindowUserPointer(win))->controls.scroll(static_cast<float>(dy), static_cast<float>(x), static_cast<float>(y));
    });
    glfwSetDropCallback(w, [](GLFWwindow* win, int count, const char** paths) {
      auto* self = static_cast<Impl*>(glfwGetWindowUserPointer(win));
      if (self->drop_handler && count > 0) self->drop_handler(std::vector<std::string>(paths, paths + count));
    });
    glfwSetFramebufferSizeCallback(w, [](GLFWwindow* win, int, int) { static_cast<Impl*>(glfwGetWindowUserPointer(win))->resized = true; });
  }

  void update_window_size() {
    int w = 0, h = 0;
    glfwGetWindowSize(window.get(), &w, &h);
    controls.set_framebuffer(static_cast<float>(std::max(w, 1)), static_cast<float>(std::max(h, 1)));
  }

  void on_command(const Command& c) {
    state->apply(c);
    if (c.screenshot) {
      pending_screenshot = options.screenshot_dir + "/nnxr-" + std::to_string(++screenshot_count) + ".png";
    }
    if (c.quit) glfwSetWindowShouldClose(window.get(), GLFW_TRUE);
  }
  void on_key(Key k, Press p) { on_command(controls.key(k, p)); }
  void on_button(Button b, Press p, float x, float y) {
    update_window_size();
    on_command(controls.button(b, p, x, y));
  }

  // Waits for every submitted frame, retires them, and rebuilds the swapchain. The queue must be
  // idle too: presentation waits on the per-image semaphores, and no fence tells when it is done
  // with them. A rare event (resize), so the stall is acceptable.
  void recreate_swapchain(bool new_renderer = false) {
    for (FrameSlot& slot : slots) wait_slot(slot);
    {
      std::lock_guard lock(device->queue_mutex());
      check(vkQueueWaitIdle(device->queue()), "vkQueueWaitIdle");
    }
    const VkExtent2D extent = framebuffer_extent();
    if (extent.width == 0 || extent.height == 0) return;  // minimised: try again later
    const VkFormat before = swapchain->format();
    swapchain->recreate(extent);
    if (new_renderer || swapchain->format() != before) {
      // The pipelines are compiled for the colour format. No frame is in flight (waited above).
      renderer = std::make_unique<Renderer>(*device, *scene, renderer_config());
      state->rebind(*renderer);
    }
    resized = false;
  }

  void wait_slot(FrameSlot& slot) {
    VkFence f = slot.done.get();
    check(vkWaitForFences(device->get(), 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (slot.serial) scene->retire(slot.serial);
    if (!slot.screenshot_path.empty()) save_screenshot(slot);
  }

  void save_screenshot(FrameSlot& slot) {
    const std::string path = std::exchange(slot.screenshot_path, {});
    try {
      const RgbaImage img = rgba_from_readback(readback.mapped, readback_extent, readback_format, /*opaque=*/true);
      engine::write_png(path, img);
      last_screenshot = path;
      std::cerr << "nnxr: screenshot written to " << path << '\n';
    } catch (const std::exception& e) {
      std::cerr << "nnxr: " << e.what() << '\n';
    }
  }
  VkExtent2D readback_extent{};
  VkFormat readback_format = VK_FORMAT_UNDEFINED;

  bool frame() {
    const double cpu_start = thread_cpu_ms();
    const Clock::time_point wall_start = Clock::now();
    // Stage: poll events.
    glfwPollEvents();
    if (glfwWindowShouldClose(window.get())) return false;
    // Frames retire as their fences signal, also on passes that draw nothing (minimised): the
    // worker may be waiting for them to publish.
    scene->retire_signalled();
    // Stage: read input.
    const auto now = Clock::now();
    const float dt = std::min(std::chrono::duration<float>(now - last_frame).count(), 0.1f);
    last_frame = now;
    update_window_size();
    controls.update(dt);
    if (const auto ray = controls.take_hover()) state->hover(*ray);  // the legend follows the mouse
    // Stage: take in published results.
    state->take_in(aspect());

    FrameSlot& slot = slots[frame_index % kFramesInFlight];
    wait_slot(slot);
    if (resized) recreate_swapchain();
    const VkExtent2D fb = framebuffer_extent();
    if (fb.width == 0 || fb.height == 0 || resized) {  // minimised: nothing to draw into
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return true;
    }
    uint32_t image = 0;
    VkResult r = vkAcquireNextImageKHR(device->get(), swapchain->get(), UINT64_MAX, slot.acquired.get(), VK_NULL_HANDLE, &image);
    if (r == VK_ERROR_OUT_OF_DATE_KHR) {
      recreate_swapchain();
      return true;
    }
    if (r != VK_SUBOPTIMAL_KHR) check(r, "vkAcquireNextImageKHR");
    const SceneFrame scene_frame = scene->acquire(++serial);

    // The home view keeps the blocks clear of the panels drawn over the window (the view's text
    // and the filter menu).
    const glm::vec2 window_px{static_cast<float>(fb.width), static_cast<float>(fb.height)};
    const FilterMenu filter_menu{interaction.op_counts().size()};
    state->frame_home(window_px, panel_rects(scene->screen_areas(), window_px, interaction.op_counts().empty() ? nullptr : &filter_menu),
                      scene->picture_points());

    // Stage: update uniforms.
    FrameParams params = state->frame_params(aspect());
    // The worker re-chooses the focus around what the mouse points at (else the view's centre),
    // not while it is over a panel of the view's text.
    controls.set_screen_areas(scene->screen_areas());
    state->follow_view(params.view[0], params.projection[0], controls.pointer());
    // The search box with its matches when it is open, in front of the camera. The filter menu is
    // the worker's text (engine/annotations.h compose_menu), placed where clicks look for it.
    overlay.clear();
    if (interaction.search().active()) draw_search(interaction.search(), interaction.camera(), aspect(), overlay);
    const FilterMenu::Placement menu =
        FilterMenu{interaction.op_counts().size()}.desktop(static_cast<float>(fb.width), static_cast<float>(fb.height));
    params.menu_origin = menu.origin;
    params.menu_scale = menu.scale;
    params.overlay_lines = overlay.lines();
    params.overlay_triangles = overlay.triangles();

    // Stage: record.
    if (!pending_screenshot.empty() && !swapchain->can_copy()) {
      std::cerr << "nnxr: " << pending_screenshot << ": this window surface cannot be read back; no screenshot\n";
      pending_screenshot.clear();
    }
    const bool shoot = !pending_screenshot.empty();
    if (shoot) prepare_readback();
    VkCommandBuffer cmd = slot.cmd;
    check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    const VkImage colour = swapchain->image(image);
    transition_image(cmd, colour, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    transition_image(cmd, swapchain->depth().image.get(), VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                     VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL);
    renderer->record(cmd, RenderTarget{swapchain->view(image), swapchain->depth().view.get(), swapchain->extent()}, scene_frame,
                     params, static_cast<uint32_t>(frame_index % kFramesInFlight));
    if (shoot) {
      transition_image(cmd, colour, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                       VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
      record_readback(cmd, colour, swapchain->extent(), readback.buffer.get());
      transition_image(cmd, colour, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
      slot.screenshot_path = std::exchange(pending_screenshot, {});
      readback_extent = swapchain->extent();
      readback_format = swapchain->format();
    } else {
      transition_image(cmd, colour, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
    }
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");

    // Stage: submit and present.
    VkFence fence = slot.done.get();
    check(vkResetFences(device->get(), 1, &fence), "vkResetFences");
    const VkSemaphore wait = slot.acquired.get();
    const VkSemaphore signal = swapchain->rendered(image);
    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.waitSemaphoreCount = 1;
    submit.pWaitSemaphores = &wait;
    submit.pWaitDstStageMask = &wait_stage;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &signal;
    VkPresentInfoKHR present{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
    present.waitSemaphoreCount = 1;
    present.pWaitSemaphores = &signal;
    present.swapchainCount = 1;
    const VkSwapchainKHR sc = swapchain->get();
    present.pSwapchains = &sc;
    present.pImageIndices = &image;
    {
      std::lock_guard lock(device->queue_mutex());
      check(vkQueueSubmit(device->queue(), 1, &submit, fence), "vkQueueSubmit");
      r = vkQueuePresentKHR(device->queue(), &present);
    }
    slot.serial = serial;
    scene->submitted(serial, fence);
    ++frame_index;
    if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) resized = true;
    else check(r, "vkQueuePresentKHR");

    state->frame_done(thread_cpu_ms() - cpu_start, scene_frame.generation,
                      std::chrono::duration<double, std::milli>(Clock::now() - wall_start).count());
    if (now - last_title > std::chrono::milliseconds(250)) {
      glfwSetWindowTitle(window.get(), state->title().c_str());
      last_title = now;
    }
    return true;
  }

  void prepare_readback() {
    const VkDeviceSize size = VkDeviceSize(swapchain->extent().width) * swapchain->extent().height * 4;
    // One readback buffer: an earlier screenshot still in flight is saved first.
    for (FrameSlot& slot : slots)
      if (!slot.screenshot_path.empty()) wait_slot(slot);
    if (readback.size >= size) return;
    readback = create_mapped_buffer(*device, size, VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  }

  void finish() {
    for (FrameSlot& slot : slots) wait_slot(slot);
  }
};

DesktopViewer::DesktopViewer(const ViewerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
DesktopViewer::~DesktopViewer() = default;

void DesktopViewer::load(ModelSource model, InputSource input) { impl_->worker->load(std::move(model), std::move(input)); }
bool DesktopViewer::frame() { return impl_->frame(); }

void DesktopViewer::run() {
  const uint64_t max = impl_->options.max_frames;
  while (max == 0 || impl_->state->settled_frames() < max) {
    if (max > 0 && impl_->state->settled_frames() + 1 == max && !impl_->options.final_screenshot.empty() &&
        impl_->last_screenshot.empty() && impl_->pending_screenshot.empty())
      impl_->pending_screenshot = impl_->options.final_screenshot;
    if (!impl_->frame()) break;
  }
  impl_->finish();
}

void DesktopViewer::key(Key key, Press press) { impl_->on_key(key, press); }
void DesktopViewer::click(Button button, Press press, float x, float y) { impl_->on_button(button, press, x, y); }
void DesktopViewer::move_cursor(float x, float y) {
  impl_->update_window_size();
  impl_->controls.cursor(x, y);
}
void DesktopViewer::type(std::string_view text) {
  for (char c : text) impl_->controls.character(static_cast<unsigned char>(c));
}
void DesktopViewer::on_drop(std::function<void(const std::vector<std::string>&)> handler) {
  impl_->drop_handler = std::move(handler);
}
void DesktopViewer::set_window_size(uint32_t width, uint32_t height) {
  glfwSetWindowSize(impl_->window.get(), static_cast<int>(width), static_cast<int>(height));
}
void DesktopViewer::rebuild_renderer() {
  impl_->finish();
  impl_->recreate_swapchain(/*new_renderer=*/true);
}
void DesktopViewer::screenshot(std::string path) { impl_->pending_screenshot = std::move(path); }
const std::string& DesktopViewer::last_screenshot() const { return impl_->last_screenshot; }

ViewStats DesktopViewer::stats() const {
  ViewStats s = impl_->state->stats();
  s.validation_errors = impl_->instance.validation_errors();
  return s;
}
Worker& DesktopViewer::worker() { return *impl_->worker; }
Interaction& DesktopViewer::interaction() { return impl_->interaction; }
const ViewerState& DesktopViewer::state() const { return *impl_->state; }
uint64_t DesktopViewer::validation_errors() const { return impl_->instance.validation_errors(); }

// ---- OffscreenViewer ----------------------------------------------------------------------------

struct OffscreenViewer::Impl {
  ViewerOptions options;
  Instance instance;
  std::unique_ptr<Device> device;
  std::unique_ptr<SceneBuffers> scene;
  std::unique_ptr<Renderer> renderer;
  std::unique_ptr<Offscreen> target;
  std::unique_ptr<Worker> worker;
  Interaction interaction;
  DesktopControls controls{interaction};
  std::unique_ptr<ViewerState> state;
  RgbaImage last;

  explicit Impl(const ViewerOptions& o) : options(o), instance(InstanceOptions{.validation = o.validation}) {
    device = std::make_unique<Device>(instance, DeviceOptions{});
    fit_budget(*device, options);
    scene = std::make_unique<SceneBuffers>(*device, buffer_config(options));
    const RendererConfig rc{.colour_format = VK_FORMAT_R8G8B8A8_SRGB, .depth_format = kDepthFormat, .view_count = 1,
                            .frames_in_flight = kFramesInFlight};
    renderer = std::make_unique<Renderer>(*device, *scene, rc);
    target = std::make_unique<Offscreen>(*device, rc, VkExtent2D{o.width, o.height});
    worker = std::make_unique<Worker>(*scene, options.worker);
    interaction.set_filter(options.filter, options.filter_tensors);
    state = std::make_unique<ViewerState>(*worker, interaction, *renderer);
    controls.set_framebuffer(static_cast<float>(o.width), static_cast<float>(o.height));
  }
  ~Impl() {
    scene->stop();
    worker.reset();
    try {
      device->wait_idle();
    } catch (const std::exception& e) {
      std::cerr << "nnxr: " << e.what() << '\n';
    }
  }
  float aspect() const { return static_cast<float>(options.width) / static_cast<float>(std::max(options.height, 1u)); }

  void frame() {
    const double cpu_start = thread_cpu_ms();
    const Clock::time_point wall_start = Clock::now();
    state->take_in(aspect());
    // Clear of the view's text panels as the window's home view (no filter menu here).
    const glm::vec2 window_px{static_cast<float>(options.width), static_cast<float>(options.height)};
    state->frame_home(window_px, panel_rects(scene->screen_areas(), window_px), scene->picture_points());
    const FrameParams params = state->frame_params(aspect());
    state->follow_view(params.view[0], params.projection[0]);
    const uint64_t generation = scene->generation();
    last = target->render(*renderer, *scene, params);
    state->frame_done(thread_cpu_ms() - cpu_start, generation,
                      std::chrono::duration<double, std::milli>(Clock::now() - wall_start).count());
  }
};

OffscreenViewer::OffscreenViewer(const ViewerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
OffscreenViewer::~OffscreenViewer() = default;
void OffscreenViewer::load(ModelSource model, InputSource input) { impl_->worker->load(std::move(model), std::move(input)); }

void OffscreenViewer::run() {
  const uint64_t frames = std::max<uint64_t>(1, impl_->options.max_frames);
  for (uint64_t i = 0; i < frames; ++i) {
    // Headless runs are scripted: each frame shows everything asked for before it.
    impl_->worker->wait_idle();
    impl_->frame();
  }
}

void OffscreenViewer::key(Key key, Press press) { impl_->state->apply(impl_->controls.key(key, press)); }
void OffscreenViewer::write_png(const std::string& path) const { engine::write_png(path, impl_->last); }
ViewStats OffscreenViewer::stats() const {
  ViewStats s = impl_->state->stats();
  s.validation_errors = impl_->instance.validation_errors();
  return s;
}
Worker& OffscreenViewer::worker() { return *impl_->worker; }
Interaction& OffscreenViewer::interaction() { return impl_->interaction; }
uint64_t OffscreenViewer::validation_errors() const { return impl_->instance.validation_errors(); }

}  // namespace nnxr::engine
