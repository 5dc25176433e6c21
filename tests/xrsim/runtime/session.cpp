// Sessions, their state machine and the frame loop (xrWaitFrame / xrBeginFrame / xrEndFrame).
#include "tests/xrsim/runtime/state.h"
#include "tests/xrsim/xrsim.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <string>
#include <thread>

namespace xrsim {

void destroy_session(Registry& r, uint64_t id) {
  auto it = r.sessions.find(id);
  if (it == r.sessions.end()) return;
  Session& s = *it->second;
  for (uint64_t sp : std::vector<uint64_t>(s.spaces)) destroy_space(r, sp);
  for (uint64_t sc : std::vector<uint64_t>(s.swapchains)) destroy_swapchain(r, sc);
  release_session_vulkan(s);
  if (auto inst = r.instances.find(s.instance); inst != r.instances.end()) {
    auto& events = inst->second->events;
    XrSession handle = handle_of<XrSession>(id);
    events.erase(std::remove_if(events.begin(), events.end(),
                                [&](const XrEventDataBuffer& e) {
                                  if (e.type == XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED)
                                    return reinterpret_cast<const XrEventDataSessionStateChanged&>(e).session == handle;
                                  if (e.type == XR_TYPE_EVENT_DATA_INTERACTION_PROFILE_CHANGED)
                                    return reinterpret_cast<const XrEventDataInteractionProfileChanged&>(e).session ==
                                           handle;
                                  return false;
                                }),
                 events.end());
    auto& list = inst->second->sessions;
    list.erase(std::remove(list.begin(), list.end(), id), list.end());
  }
  r.sessions.erase(it);
}

}  // namespace xrsim

namespace xrsim::api {
namespace {

// Looks a session up; on success also gives its instance.
XrResult lookup(XrSession session, Session*& s, Instance*& inst) {
  Registry& r = Registry::get();
  s = find(r.sessions, session);
  if (s == nullptr) return XR_ERROR_HANDLE_INVALID;
  inst = r.instances.at(s->instance).get();
  return XR_SUCCESS;
}

}  // namespace

XrResult CreateSession(XrInstance instance, const XrSessionCreateInfo* info, XrSession* out) {
  return guarded("xrCreateSession", [&]() -> XrResult {
    Registry& r = Registry::get();
    Instance* inst = find(r.instances, instance);
    if (inst == nullptr) return XR_ERROR_HANDLE_INVALID;
    if (info == nullptr || out == nullptr || info->type != XR_TYPE_SESSION_CREATE_INFO || info->createFlags != 0)
      return XR_ERROR_VALIDATION_FAILURE;
    if (info->systemId != kSystemId || inst->system_away != 0) return XR_ERROR_SYSTEM_INVALID;
    if (!inst->sessions.empty()) return XR_ERROR_LIMIT_REACHED;  // one session at a time
    auto* binding = reinterpret_cast<const XrGraphicsBindingVulkan2KHR*>(
        find_in_chain(info->next, XR_TYPE_GRAPHICS_BINDING_VULKAN2_KHR));
    if (binding == nullptr || !inst->ext_vulkan2) return XR_ERROR_GRAPHICS_DEVICE_INVALID;
    if (!inst->graphics_requirements_queried) return XR_ERROR_GRAPHICS_REQUIREMENTS_CALL_MISSING;
    if (binding->instance == VK_NULL_HANDLE || binding->device == VK_NULL_HANDLE ||
        binding->physicalDevice == VK_NULL_HANDLE || binding->physicalDevice != inst->vk_physical)
      return XR_ERROR_GRAPHICS_DEVICE_INVALID;
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(binding->physicalDevice, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(binding->physicalDevice, &families, props.data());
    if (binding->queueFamilyIndex >= families || binding->queueIndex >= props[binding->queueFamilyIndex].queueCount ||
        !(props[binding->queueFamilyIndex].queueFlags & VK_QUEUE_GRAPHICS_BIT))
      return XR_ERROR_GRAPHICS_DEVICE_INVALID;

    auto s = std::make_unique<Session>();
    s->id = r.new_id();
    s->instance = inst->id;
    s->vk_instance = binding->instance;
    s->vk_physical = binding->physicalDevice;
    s->vk_device = binding->device;
    s->queue_family = binding->queueFamilyIndex;
    vkGetDeviceQueue(s->vk_device, binding->queueFamilyIndex, binding->queueIndex, &s->vk_queue);
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = s->queue_family;
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (vkCreateCommandPool(s->vk_device, &pool, nullptr, &s->vk_pool) != VK_SUCCESS ||
        vkCreateFence(s->vk_device, &fence, nullptr, &s->vk_fence) != VK_SUCCESS) {
      release_session_vulkan(*s);
      return XR_ERROR_RUNTIME_FAILURE;
    }
    Session& ref = *s;
    inst->sessions.push_back(s->id);
    *out = handle_of<XrSession>(s->id);
    r.sessions.emplace(s->id, std::move(s));
    queue_state(*inst, ref, XR_SESSION_STATE_IDLE);
    queue_state(*inst, ref, XR_SESSION_STATE_READY);
    return XR_SUCCESS;
  });
}

XrResult DestroySession(XrSession session) {
  return guarded("xrDestroySession", [&]() -> XrResult {
    Registry& r = Registry::get();
    if (find(r.sessions, session) == nullptr) return XR_ERROR_HANDLE_INVALID;
    destroy_session(r, id_of(session));
    return XR_SUCCESS;
  });
}

XrResult BeginSession(XrSession session, const XrSessionBeginInfo* info) {
  return guarded("xrBeginSession", [&]() -> XrResult {
    Session* s;
    Instance* inst;
    if (XrResult res = lookup(session, s, inst); XR_FAILED(res)) return res;
    if (info == nullptr || info->type != XR_TYPE_SESSION_BEGIN_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (s->running) return XR_ERROR_SESSION_RUNNING;
    if (info->primaryViewConfigurationType != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO)
      return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    if (s->state != XR_SESSION_STATE_READY) return XR_ERROR_SESSION_NOT_READY;
    s->running = true;
    s->view_config = info->primaryViewConfigurationType;
    s->waited = s->begun = false;
    s->synchronized_queued = s->visible_queued = false;
    return XR_SUCCESS;
  });
}

XrResult EndSession(XrSession session) {
  return guarded("xrEndSession", [&]() -> XrResult {
    Session* s;
    Instance* inst;
    if (XrResult res = lookup(session, s, inst); XR_FAILED(res)) return res;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (!s->running) return XR_ERROR_SESSION_NOT_RUNNING;
    if (s->state != XR_SESSION_STATE_STOPPING) return XR_ERROR_SESSION_NOT_STOPPING;
    s->running = false;
    s->waited = s->begun = false;
    queue_state(*inst, *s, XR_SESSION_STATE_IDLE);
    if (s->exit_requested) {
      queue_state(*inst, *s, XR_SESSION_STATE_EXITING);
    } else {
      queue_state(*inst, *s, XR_SESSION_STATE_READY);
    }
    return XR_SUCCESS;
  });
}

XrResult RequestExitSession(XrSession session) {
  return guarded("xrRequestExitSession", [&]() -> XrResult {
    Session* s;
    Instance* inst;
    if (XrResult res = lookup(session, s, inst); XR_FAILED(res)) return res;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (!s->running) return XR_ERROR_SESSION_NOT_RUNNING;
    queue_stop(*inst, *s);
    return XR_SUCCESS;
  });
}

// ---- frames --------------------------------------------------------------------------------------

XrResult WaitFrame(XrSession session, const XrFrameWaitInfo* info, XrFrameState* state) {
  std::chrono::steady_clock::time_point due{};
  const XrResult result = guarded("xrWaitFrame", [&]() -> XrResult {
    Session* s;
    Instance* inst;
    if (XrResult res = lookup(session, s, inst); XR_FAILED(res)) return res;
    if ((info != nullptr && info->type != XR_TYPE_FRAME_WAIT_INFO) || state == nullptr ||
        state->type != XR_TYPE_FRAME_STATE)
      return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (!s->running) return XR_ERROR_SESSION_NOT_RUNNING;
    // A real runtime would block until the previous frame began; blocking forever helps no test.
    if (s->waited) return XR_ERROR_CALL_ORDER_INVALID;
    uint64_t frame = inst->frames_waited++;
    s->wait_frame = frame;
    s->waited = true;
    // Paced at the display rate: each wait returns a frame period after the one before (or now,
    // when the app is slower than that).
    const auto now = std::chrono::steady_clock::now();
    due = s->next_wait == std::chrono::steady_clock::time_point{} ? now : std::max(now, s->next_wait);
    s->next_wait = due + std::chrono::nanoseconds(kFramePeriod);

    ScriptState st = inst->script.at(frame);
    if (st.lose_session && !s->loss_queued) {
      // Lost now: every call on the session fails from here on, before the app polls the event.
      s->loss_queued = true;
      s->lost = true;
      inst->system_away = st.away_calls;
      if (inst->script.other_gpu_after_loss()) inst->gpu_switch_pending = true;
      queue_state(*inst, *s, XR_SESSION_STATE_LOSS_PENDING);
    }
    if (st.request_exit && !s->exit_requested && !s->loss_queued) queue_stop(*inst, *s);
    if (!s->synchronized_queued && !s->loss_queued) {
      s->synchronized_queued = true;
      queue_state(*inst, *s, XR_SESSION_STATE_SYNCHRONIZED);
    }
    state->predictedDisplayTime = frame_time(frame);
    state->predictedDisplayPeriod = kFramePeriod;
    state->shouldRender =
        (st.should_render && !s->lost && (s->state == XR_SESSION_STATE_VISIBLE || s->state == XR_SESSION_STATE_FOCUSED))
            ? XR_TRUE
            : XR_FALSE;
    return XR_SUCCESS;
  });
  // The wait happens outside the registry lock.
  if (XR_SUCCEEDED(result)) std::this_thread::sleep_until(due);
  return result;
}

XrResult BeginFrame(XrSession session, const XrFrameBeginInfo* info) {
  return guarded("xrBeginFrame", [&]() -> XrResult {
    Session* s;
    Instance* inst;
    if (XrResult res = lookup(session, s, inst); XR_FAILED(res)) return res;
    if (info != nullptr && info->type != XR_TYPE_FRAME_BEGIN_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (!s->running) return XR_ERROR_SESSION_NOT_RUNNING;
    if (!s->waited) return XR_ERROR_CALL_ORDER_INVALID;
    s->waited = false;
    XrResult result = s->begun ? XR_FRAME_DISCARDED : XR_SUCCESS;
    s->begun = true;
    return result;
  });
}

namespace {

// Checks one swapchain sub-image of a layer. `colour` says which kind of swapchain is needed.
XrResult check_sub_image(Registry& r, const Session& s, const XrSwapchainSubImage& sub, bool colour,
                         const Swapchain** out) {
  const Swapchain* sc = find(r.swapchains, sub.swapchain);
  if (sc == nullptr || sc->session != s.id) return XR_ERROR_HANDLE_INVALID;
  if (sc->colour != colour) return XR_ERROR_LAYER_INVALID;
  if (!sc->last_released) return XR_ERROR_LAYER_INVALID;  // nothing released to show
  if (sub.imageArrayIndex >= sc->array_size) return XR_ERROR_VALIDATION_FAILURE;
  const XrRect2Di& rect = sub.imageRect;
  if (rect.offset.x < 0 || rect.offset.y < 0 || rect.extent.width <= 0 || rect.extent.height <= 0 ||
      static_cast<int64_t>(rect.offset.x) + rect.extent.width > sc->width ||
      static_cast<int64_t>(rect.offset.y) + rect.extent.height > sc->height)
    return XR_ERROR_SWAPCHAIN_RECT_INVALID;
  *out = sc;
  return XR_SUCCESS;
}

XrResult check_space(Registry& r, const Session& s, XrSpace space) {
  const Space* sp = find(r.spaces, space);
  return (sp == nullptr || sp->session != s.id) ? XR_ERROR_HANDLE_INVALID : XR_SUCCESS;
}

bool fov_valid(const XrFovf& f) {
  for (float v : {f.angleLeft, f.angleRight, f.angleUp, f.angleDown})
    if (!std::isfinite(v) || std::fabs(v) >= 3.1415926f / 2) return false;
  return f.angleLeft < f.angleRight && f.angleDown < f.angleUp;
}

}  // namespace

XrResult EndFrame(XrSession session, const XrFrameEndInfo* info) {
  return guarded("xrEndFrame", [&]() -> XrResult {
    Registry& r = Registry::get();
    Session* s;
    Instance* inst;
    if (XrResult res = lookup(session, s, inst); XR_FAILED(res)) return res;
    if (info == nullptr || info->type != XR_TYPE_FRAME_END_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (!s->running) return XR_ERROR_SESSION_NOT_RUNNING;
    if (!s->begun) return XR_ERROR_CALL_ORDER_INVALID;
    if (info->displayTime <= 0) return XR_ERROR_TIME_INVALID;
    if (info->environmentBlendMode != XR_ENVIRONMENT_BLEND_MODE_OPAQUE) {
      bool known = info->environmentBlendMode == XR_ENVIRONMENT_BLEND_MODE_ADDITIVE ||
                   info->environmentBlendMode == XR_ENVIRONMENT_BLEND_MODE_ALPHA_BLEND;
      return known ? XR_ERROR_ENVIRONMENT_BLEND_MODE_UNSUPPORTED : XR_ERROR_VALIDATION_FAILURE;
    }
    if (info->layerCount > kMaxLayers) return XR_ERROR_LAYER_LIMIT_EXCEEDED;
    if (info->layerCount > 0 && info->layers == nullptr) return XR_ERROR_VALIDATION_FAILURE;

    // Validate every layer before anything is recorded.
    constexpr XrCompositionLayerFlags kLayerFlags = XR_COMPOSITION_LAYER_CORRECT_CHROMATIC_ABERRATION_BIT |
                                                    XR_COMPOSITION_LAYER_BLEND_TEXTURE_SOURCE_ALPHA_BIT |
                                                    XR_COMPOSITION_LAYER_UNPREMULTIPLIED_ALPHA_BIT;
    uint32_t projection_views = 0, depth_infos = 0;
    for (uint32_t i = 0; i < info->layerCount; ++i) {
      const XrCompositionLayerBaseHeader* layer = info->layers[i];
      if (layer == nullptr) return XR_ERROR_LAYER_INVALID;
      if (layer->layerFlags & ~kLayerFlags) return XR_ERROR_VALIDATION_FAILURE;
      if (XrResult res = check_space(r, *s, layer->space); XR_FAILED(res)) return res;
      const Swapchain* sc = nullptr;
      if (layer->type == XR_TYPE_COMPOSITION_LAYER_PROJECTION) {
        auto* proj = reinterpret_cast<const XrCompositionLayerProjection*>(layer);
        if (proj->viewCount != 2 || proj->views == nullptr) return XR_ERROR_VALIDATION_FAILURE;
        for (uint32_t v = 0; v < proj->viewCount; ++v) {
          const XrCompositionLayerProjectionView& view = proj->views[v];
          if (view.type != XR_TYPE_COMPOSITION_LAYER_PROJECTION_VIEW) return XR_ERROR_VALIDATION_FAILURE;
          if (!pose_valid(view.pose)) return XR_ERROR_POSE_INVALID;
          if (!fov_valid(view.fov)) return XR_ERROR_VALIDATION_FAILURE;
          if (XrResult res = check_sub_image(r, *s, view.subImage, true, &sc); XR_FAILED(res)) return res;
          ++projection_views;
          auto* depth = reinterpret_cast<const XrCompositionLayerDepthInfoKHR*>(
              find_in_chain(view.next, XR_TYPE_COMPOSITION_LAYER_DEPTH_INFO_KHR));
          if (depth == nullptr) continue;
          if (!inst->ext_depth) return XR_ERROR_VALIDATION_FAILURE;
          if (XrResult res = check_sub_image(r, *s, depth->subImage, false, &sc); XR_FAILED(res)) return res;
          if (!(depth->minDepth >= 0 && depth->minDepth <= depth->maxDepth && depth->maxDepth <= 1) ||
              !std::isfinite(depth->nearZ) || !std::isfinite(depth->farZ) || depth->nearZ == depth->farZ)
            return XR_ERROR_VALIDATION_FAILURE;
          ++depth_infos;
        }
      } else if (layer->type == XR_TYPE_COMPOSITION_LAYER_QUAD) {
        auto* quad = reinterpret_cast<const XrCompositionLayerQuad*>(layer);
        if (!pose_valid(quad->pose)) return XR_ERROR_POSE_INVALID;
        if (XrResult res = check_sub_image(r, *s, quad->subImage, true, &sc); XR_FAILED(res)) return res;
      } else {
        return XR_ERROR_LAYER_INVALID;
      }
    }

    uint64_t frame = s->wait_frame;
    if (!inst->capture_dir.empty()) {
      for (uint32_t i = 0; i < info->layerCount; ++i) {
        if (info->layers[i]->type != XR_TYPE_COMPOSITION_LAYER_PROJECTION) continue;
        auto* proj = reinterpret_cast<const XrCompositionLayerProjection*>(info->layers[i]);
        for (uint32_t v = 0; v < proj->viewCount; ++v) {
          const XrSwapchainSubImage& sub = proj->views[v].subImage;
          capture_view(*inst, *s, *find(r.swapchains, sub.swapchain), sub, frame, i, v);
        }
      }
    }
    s->begun = false;
    ++inst->frames_submitted;
    inst->record.add("frame " + std::to_string(frame) + " " + std::to_string(info->layerCount) + " " +
                     std::to_string(projection_views) + " " + std::to_string(depth_infos));
    if (ScriptState st = inst->script.at(frame); st.lose_session_at_end && !s->loss_queued) {
      s->loss_queued = true;
      s->lost = true;
      inst->system_away = st.away_calls;
      if (inst->script.other_gpu_after_loss()) inst->gpu_switch_pending = true;
      queue_state(*inst, *s, XR_SESSION_STATE_LOSS_PENDING);
    }
    if (s->synchronized_queued && !s->visible_queued && !s->loss_queued && !s->exit_requested) {
      s->visible_queued = true;
      queue_state(*inst, *s, XR_SESSION_STATE_VISIBLE);
      queue_state(*inst, *s, XR_SESSION_STATE_FOCUSED);
    }
    return XR_SUCCESS;
  });
}

}  // namespace xrsim::api
