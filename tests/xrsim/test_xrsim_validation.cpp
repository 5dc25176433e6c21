// API misuse is caught: by the core validation layer in front of the runtime (its messages reach
// the app's debug messenger and the runtime never sees the call), and by the runtime's own checks.
#include "tests/xrsim/client/xr_client.h"
#include "tests/xrsim/xrsim.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using xrsim::client::Client;
using xrsim::client::TestEnv;
using Colours = std::array<std::array<float, 4>, 2>;
const Colours kGrey = {{{0.2f, 0.2f, 0.2f, 1.0f}, {0.2f, 0.2f, 0.2f, 1.0f}}};

bool has_message(const Client& c, const std::string& needle) {
  auto m = c.layer_messages();
  return std::any_of(m.begin(), m.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

xrsim::Record read(const TestEnv& env) {
  std::string error;
  auto rec = xrsim::read_record(env.record_path(), &error);
  EXPECT_TRUE(rec.has_value()) << error;
  return rec.value_or(xrsim::Record{});
}

bool runtime_returned(const xrsim::Record& rec, const std::string& function) {
  return std::any_of(rec.errors.begin(), rec.errors.end(), [&](const auto& e) { return e.function == function; });
}

TEST(XrsimValidation, CoreLayerRejectsAWrongStructureType) {
  TestEnv env("layer");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_TRUE(c.layer_listed);
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  XrFrameState fs{XR_TYPE_FRAME_STATE};
  ASSERT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_SUCCESS);
  XrFrameBeginInfo wrong{XR_TYPE_FRAME_END_INFO};
  EXPECT_EQ(xrBeginFrame(c.session, &wrong), XR_ERROR_VALIDATION_FAILURE);
  EXPECT_TRUE(has_message(c, "VUID-XrFrameBeginInfo-type-type")) << "no message from the core validation layer";

  // A handle the layer never saw.
  XrSpaceLocation loc{XR_TYPE_SPACE_LOCATION};
  EXPECT_FALSE(has_message(c, "VUID-xrLocateSpace-space-parameter"));
  EXPECT_EQ(xrLocateSpace(reinterpret_cast<XrSpace>(uintptr_t{0xdead}), c.app_space, fs.predictedDisplayTime, &loc),
            XR_ERROR_HANDLE_INVALID);
  EXPECT_TRUE(has_message(c, "VUID-xrLocateSpace-space-parameter"));
  c.destroy_all();
  // The layer stopped both calls: the runtime returned no error for them.
  xrsim::Record rec = read(env);
  EXPECT_FALSE(runtime_returned(rec, "xrBeginFrame"));
  EXPECT_FALSE(runtime_returned(rec, "xrLocateSpace"));
}

TEST(XrsimValidation, RuntimeChecksTheSameWithoutTheLayer) {
  TestEnv env("nolayer");
  Client::Options o;
  o.core_validation = false;
  Client c(o);
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  XrFrameState fs{XR_TYPE_FRAME_STATE};
  ASSERT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_SUCCESS);
  XrFrameBeginInfo wrong{XR_TYPE_FRAME_END_INFO};
  EXPECT_EQ(xrBeginFrame(c.session, &wrong), XR_ERROR_VALIDATION_FAILURE);
  c.destroy_all();
  xrsim::Record rec = read(env);
  EXPECT_TRUE(runtime_returned(rec, "xrBeginFrame"));
}

TEST(XrsimValidation, FrameCallOrderAndLayerContents) {
  TestEnv env("order");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kGrey), XR_SUCCESS) << c.error;
  // xrBeginFrame before xrWaitFrame.
  XrFrameBeginInfo bi{XR_TYPE_FRAME_BEGIN_INFO};
  EXPECT_EQ(xrBeginFrame(c.session, &bi), XR_ERROR_CALL_ORDER_INVALID);

  XrFrameState fs{XR_TYPE_FRAME_STATE};
  ASSERT_EQ(xrWaitFrame(c.session, nullptr, &fs), XR_SUCCESS);
  ASSERT_EQ(xrBeginFrame(c.session, &bi), XR_SUCCESS);
  // A projection layer on a swapchain with nothing released yet is invalid ...
  XrCompositionLayerProjectionView views[2] = {{XR_TYPE_COMPOSITION_LAYER_PROJECTION_VIEW},
                                               {XR_TYPE_COMPOSITION_LAYER_PROJECTION_VIEW}};
  for (auto& v : views) {
    v.pose.orientation.w = 1;
    v.fov = {-0.7f, 0.7f, 0.7f, -0.7f};
    v.subImage.swapchain = c.colour[0].handle;
    v.subImage.imageRect = {{0, 0}, {256, 256}};
  }
  XrCompositionLayerProjection layer{XR_TYPE_COMPOSITION_LAYER_PROJECTION};
  layer.space = c.app_space;
  layer.viewCount = 2;
  layer.views = views;
  const XrCompositionLayerBaseHeader* layers[] = {reinterpret_cast<XrCompositionLayerBaseHeader*>(&layer)};
  XrFrameEndInfo ei{XR_TYPE_FRAME_END_INFO};
  ei.displayTime = fs.predictedDisplayTime;
  ei.environmentBlendMode = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
  ei.layerCount = 1;
  ei.layers = layers;
  // Release one image of the swapchain so only the layer contents are at fault below.
  uint32_t index = 0;
  XrSwapchainImageWaitInfo wi{XR_TYPE_SWAPCHAIN_IMAGE_WAIT_INFO};
  wi.timeout = XR_INFINITE_DURATION;
  EXPECT_EQ(xrWaitSwapchainImage(c.colour[0].handle, &wi), XR_ERROR_CALL_ORDER_INVALID);  // nothing acquired
  ASSERT_EQ(xrAcquireSwapchainImage(c.colour[0].handle, nullptr, &index), XR_SUCCESS);
  EXPECT_EQ(xrReleaseSwapchainImage(c.colour[0].handle, nullptr), XR_ERROR_CALL_ORDER_INVALID);  // not waited
  ASSERT_EQ(xrWaitSwapchainImage(c.colour[0].handle, &wi), XR_SUCCESS);
  ASSERT_EQ(xrReleaseSwapchainImage(c.colour[0].handle, nullptr), XR_SUCCESS);

  views[1].subImage.imageRect = {{200, 0}, {100, 256}};  // past the right edge
  EXPECT_EQ(xrEndFrame(c.session, &ei), XR_ERROR_SWAPCHAIN_RECT_INVALID);
  views[1].subImage.imageRect = {{0, 0}, {256, 256}};
  views[1].subImage.imageArrayIndex = 1;  // the swapchain has one layer
  EXPECT_EQ(xrEndFrame(c.session, &ei), XR_ERROR_VALIDATION_FAILURE);
  views[1].subImage.imageArrayIndex = 0;
  views[1].pose.orientation.w = 3;  // not a unit quaternion
  EXPECT_EQ(xrEndFrame(c.session, &ei), XR_ERROR_POSE_INVALID);
  views[1].pose.orientation.w = 1;
  EXPECT_EQ(xrEndFrame(c.session, &ei), XR_SUCCESS);

  // Swapchain creation with a format the runtime does not offer.
  XrSwapchainCreateInfo sci{XR_TYPE_SWAPCHAIN_CREATE_INFO};
  sci.usageFlags = XR_SWAPCHAIN_USAGE_COLOR_ATTACHMENT_BIT;
  sci.format = VK_FORMAT_R16G16B16A16_SFLOAT;
  sci.sampleCount = 1;
  sci.width = sci.height = 64;
  sci.faceCount = sci.arraySize = sci.mipCount = 1;
  XrSwapchain sc = XR_NULL_HANDLE;
  EXPECT_EQ(xrCreateSwapchain(c.session, &sci, &sc), XR_ERROR_SWAPCHAIN_FORMAT_UNSUPPORTED);
  c.destroy_all();

  xrsim::Record rec = read(env);
  std::vector<std::string> results;
  for (const auto& e : rec.errors) results.push_back(e.function + " " + e.result);
  const std::vector<std::string> expected = {
      "xrBeginFrame XR_ERROR_CALL_ORDER_INVALID",         "xrWaitSwapchainImage XR_ERROR_CALL_ORDER_INVALID",
      "xrReleaseSwapchainImage XR_ERROR_CALL_ORDER_INVALID", "xrEndFrame XR_ERROR_SWAPCHAIN_RECT_INVALID",
      "xrEndFrame XR_ERROR_VALIDATION_FAILURE",           "xrEndFrame XR_ERROR_POSE_INVALID",
      "xrCreateSwapchain XR_ERROR_SWAPCHAIN_FORMAT_UNSUPPORTED"};
  EXPECT_EQ(results, expected);
}

}  // namespace
