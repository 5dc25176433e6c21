// A desktop window that mirrors an image rendered for something else: the headset's left eye.
//
//   Mirror mirror(width, height);                       // throws NoDisplayError (no display)
//   InstanceOptions io{.extensions = mirror.instance_extensions()};
//   DeviceOptions do{.extensions = {Mirror::kDeviceExtension}};
//   ... instance and device (created by the engine or adopted) ...
//   mirror.attach(instance, device);                   // throws NoDisplayError when the device's
//                                                      // queue cannot present to the window
//   per frame, outside the headset's frame timing:  mirror.poll();
//   while recording a frame whose `source` image was rendered (COLOR_ATTACHMENT_OPTIMAL):
//     if (auto blit = mirror.record(cmd, source, layer, extent, slot)) {
//       submit waiting on blit->wait (TRANSFER stage), signalling blit->signal;
//       mirror.present(*blit);                          // right after the submit, queue locked
//     }
//
// Never blocks the caller's frame: record() acquires a window image with a zero timeout and skips
// the frame when none is free; presentation prefers MAILBOX or IMMEDIATE; a resized or
// out-of-date window is rebuilt in poll() (which waits for the queue to idle, a rare event).
// The blit keeps the source's aspect ratio, letterboxed in the background colour.
//
// Ownership: owns the GLFW library, window, surface and swapchain; the Instance and Device passed
// to attach() must outlive it. Frame thread only (GLFW: the main thread). One at a time per
// process (GLFW is process-global; no DesktopViewer alongside).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnxr::engine {

class Instance;
class Device;

class Mirror {
 public:
  static constexpr const char* kDeviceExtension = "VK_KHR_swapchain";

  Mirror(uint32_t width, uint32_t height, uint32_t frame_slots);
  ~Mirror();
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;

  std::vector<std::string> instance_extensions() const;
  void attach(const Instance& instance, const Device& device);

  // Window events; rebuilds the swapchain after a resize. Returns false once the user closed the
  // window.
  bool poll();

  struct Blit {
    VkSemaphore wait = VK_NULL_HANDLE;    // signalled when the window image is free
    VkSemaphore signal = VK_NULL_HANDLE;  // to signal at the submit; presentation waits on it
    uint32_t image = 0;
  };
  // Records the copy of `layer` of `source` (extent `extent`, COLOR_ATTACHMENT_OPTIMAL before and
  // after) into a free window image. nullopt: no image free right now (the frame is skipped) or
  // the window is minimised. `slot` < frame_slots; the caller's previous submission of that slot
  // has completed.
  std::optional<Blit> record(VkCommandBuffer cmd, VkImage source, uint32_t layer, VkExtent2D extent, uint32_t slot,
                             const float background[3]);
  // Queues the image for presentation. The caller holds the device's queue mutex.
  void present(const Blit& blit);

  uint64_t presented() const;
  uint64_t skipped() const;  // frames with no free window image
  VkPresentModeKHR present_mode() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnxr::engine
