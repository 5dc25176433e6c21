// The simulated runtime through the real loader and the core validation layer: instance, system,
// Vulkan through XR_KHR_vulkan_enable2, session, swapchains, frames and the captured eye images.
#include "tests/xrsim/client/xr_client.h"
#include "tests/xrsim/xrsim.h"

#include <gtest/gtest.h>
#include <stb_image.h>

#include <cmath>
#include <cstring>
#include <filesystem>

namespace {

using xrsim::client::Client;
using xrsim::client::TestEnv;
using Colours = std::array<std::array<float, 4>, 2>;

const Colours kColours = {{{1.0f, 0.5f, 0.0f, 1.0f}, {0.0f, 0.25f, 1.0f, 1.0f}}};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

xrsim::Record read(const TestEnv& env) {
  std::string error;
  auto rec = xrsim::read_record(env.record_path(), &error);
  EXPECT_TRUE(rec.has_value()) << error;
  return rec.value_or(xrsim::Record{});
}

// Every pixel of a PNG has the expected RGBA within `tol`; reports the first mismatch.
void expect_png_colour(const std::string& file, uint32_t width, uint32_t height, const std::array<int, 4>& rgba,
                       int tol = 1) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(file.c_str(), &w, &h, &n, 4);
  ASSERT_NE(px, nullptr) << file << ": " << stbi_failure_reason();
  EXPECT_EQ(static_cast<uint32_t>(w), width) << file;
  EXPECT_EQ(static_cast<uint32_t>(h), height) << file;
  int bad = 0;
  for (int i = 0; i < w * h && bad == 0; ++i)
    for (int c = 0; c < 4; ++c)
      if (std::abs(px[i * 4 + c] - rgba[c]) > tol) {
        ADD_FAILURE() << file << ": pixel " << i << " channel " << c << " is " << int(px[i * 4 + c]) << ", expected "
                      << rgba[c];
        bad = 1;
        break;
      }
  stbi_image_free(px);
}

TEST(XrsimLifecycle, LoaderLoadsRuntimeWithCoreValidationLayer) {
  TestEnv env("loader");
  Client c;
  ASSERT_EQ(c.create_instance(), XR_SUCCESS) << c.error;
  EXPECT_TRUE(c.layer_listed);
  XrInstanceProperties props{XR_TYPE_INSTANCE_PROPERTIES};
  ASSERT_EQ(xrGetInstanceProperties(c.instance, &props), XR_SUCCESS);
  EXPECT_STREQ(props.runtimeName, "nnxr xrsim");

  uint32_t n = 0;
  ASSERT_EQ(xrEnumerateInstanceExtensionProperties(nullptr, 0, &n, nullptr), XR_SUCCESS);
  std::vector<XrExtensionProperties> ext(n, {XR_TYPE_EXTENSION_PROPERTIES});
  ASSERT_EQ(xrEnumerateInstanceExtensionProperties(nullptr, n, &n, ext.data()), XR_SUCCESS);
  auto has = [&](const char* name) {
    for (const auto& e : ext)
      if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
  };
  EXPECT_TRUE(has(XR_KHR_VULKAN_ENABLE2_EXTENSION_NAME));
  EXPECT_TRUE(has(XR_KHR_COMPOSITION_LAYER_DEPTH_EXTENSION_NAME));

  // Strings and paths round-trip; the two-call idiom reports the needed size.
  char buf[XR_MAX_RESULT_STRING_SIZE];
  ASSERT_EQ(xrResultToString(c.instance, XR_ERROR_SESSION_LOST, buf), XR_SUCCESS);
  EXPECT_STREQ(buf, "XR_ERROR_SESSION_LOST");
  char sbuf[XR_MAX_STRUCTURE_NAME_SIZE];
  ASSERT_EQ(xrStructureTypeToString(c.instance, XR_TYPE_FRAME_STATE, sbuf), XR_SUCCESS);
  EXPECT_STREQ(sbuf, "XR_TYPE_FRAME_STATE");
  XrPath path = XR_NULL_PATH;
  ASSERT_EQ(xrStringToPath(c.instance, "/user/hand/left", &path), XR_SUCCESS);
  uint32_t len = 0;
  ASSERT_EQ(xrPathToString(c.instance, path, 0, &len, nullptr), XR_SUCCESS);
  EXPECT_EQ(len, std::strlen("/user/hand/left") + 1);
  char small[4];
  EXPECT_EQ(xrPathToString(c.instance, path, sizeof small, &len, small), XR_ERROR_SIZE_INSUFFICIENT);
  std::string str(len, '\0');
  ASSERT_EQ(xrPathToString(c.instance, path, len, &len, str.data()), XR_SUCCESS);
  EXPECT_STREQ(str.c_str(), "/user/hand/left");
  XrPath bad = XR_NULL_PATH;
  EXPECT_EQ(xrStringToPath(c.instance, "/user//hand", &bad), XR_ERROR_PATH_FORMAT_INVALID);
  EXPECT_EQ(xrStringToPath(c.instance, "/User/Hand", &bad), XR_ERROR_PATH_FORMAT_INVALID);
  EXPECT_TRUE(c.validation_messages.empty()) << joined(c.validation_messages);
  EXPECT_TRUE(c.layer_messages().empty()) << joined(c.layer_messages());
}

TEST(XrsimLifecycle, SystemViewsAndFormats) {
  TestEnv env("system");
  Client c;
  ASSERT_EQ(c.create_instance(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.create_vulkan(), XR_SUCCESS) << c.error;
  EXPECT_EQ(c.view_config.recommendedImageRectWidth, xrsim::kDefaultViewSize);
  EXPECT_EQ(c.view_config.recommendedImageRectHeight, xrsim::kDefaultViewSize);

  XrSystemProperties sp{XR_TYPE_SYSTEM_PROPERTIES};
  ASSERT_EQ(xrGetSystemProperties(c.instance, c.system, &sp), XR_SUCCESS);
  EXPECT_TRUE(sp.trackingProperties.positionTracking);
  EXPECT_EQ(xrGetSystemProperties(c.instance, c.system + 1, &sp), XR_ERROR_SYSTEM_INVALID);

  XrSystemGetInfo gi{XR_TYPE_SYSTEM_GET_INFO};
  gi.formFactor = XR_FORM_FACTOR_HANDHELD_DISPLAY;
  XrSystemId sys = 0;
  EXPECT_EQ(xrGetSystem(c.instance, &gi, &sys), XR_ERROR_FORM_FACTOR_UNSUPPORTED);

  uint32_t n = 0;
  ASSERT_EQ(xrEnumerateViewConfigurations(c.instance, c.system, 0, &n, nullptr), XR_SUCCESS);
  ASSERT_EQ(n, 1u);
  XrViewConfigurationType vt{};
  ASSERT_EQ(xrEnumerateViewConfigurations(c.instance, c.system, 1, &n, &vt), XR_SUCCESS);
  EXPECT_EQ(vt, XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO);
  XrEnvironmentBlendMode mode{};
  ASSERT_EQ(xrEnumerateEnvironmentBlendModes(c.instance, c.system, vt, 1, &n, &mode), XR_SUCCESS);
  EXPECT_EQ(mode, XR_ENVIRONMENT_BLEND_MODE_OPAQUE);

  ASSERT_EQ(c.create_session(), XR_SUCCESS) << c.error;
  ASSERT_EQ(xrEnumerateSwapchainFormats(c.session, 0, &n, nullptr), XR_SUCCESS);
  std::vector<int64_t> formats(n);
  ASSERT_EQ(xrEnumerateSwapchainFormats(c.session, n, &n, formats.data()), XR_SUCCESS);
  for (int64_t f : {VK_FORMAT_R8G8B8A8_SRGB, VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_D32_SFLOAT})
    EXPECT_NE(std::find(formats.begin(), formats.end(), f), formats.end()) << "format " << f;
  EXPECT_EQ(formats.front(), VK_FORMAT_R8G8B8A8_SRGB);  // sRGB colour is preferred

  uint32_t spaces = 0;
  XrReferenceSpaceType one{};
  EXPECT_EQ(xrEnumerateReferenceSpaces(c.session, 1, &spaces, &one), XR_ERROR_SIZE_INSUFFICIENT);
  EXPECT_EQ(spaces, 3u);
  EXPECT_EQ(c.app_space_type, XR_REFERENCE_SPACE_TYPE_STAGE);
  EXPECT_TRUE(c.validation_messages.empty()) << joined(c.validation_messages);
  EXPECT_TRUE(c.layer_messages().empty()) << joined(c.layer_messages());
}

TEST(XrsimLifecycle, FramesReachFocusedAndCaptureEyeColours) {
  TestEnv env("frames");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kColours), XR_SUCCESS) << c.error;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(c.frame(kColours), XR_SUCCESS) << c.error;
  ASSERT_EQ(xrRequestExitSession(c.session), XR_SUCCESS);
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_EXITING, 10, kColours), XR_SUCCESS) << c.error;
  EXPECT_GE(c.frames_rendered, 3);
  EXPECT_TRUE(c.vk_validation) << "VK_LAYER_KHRONOS_validation is missing (package vulkan-validationlayers)";
  EXPECT_TRUE(c.validation_messages.empty()) << joined(c.validation_messages);
  EXPECT_TRUE(c.layer_messages().empty()) << joined(c.layer_messages());
  c.destroy_all();

  xrsim::Record rec = read(env);
  ASSERT_TRUE(rec.complete);
  const std::vector<std::string> expected = {
      "XR_SESSION_STATE_IDLE",    "XR_SESSION_STATE_READY",        "XR_SESSION_STATE_SYNCHRONIZED",
      "XR_SESSION_STATE_VISIBLE", "XR_SESSION_STATE_FOCUSED",      "XR_SESSION_STATE_VISIBLE",
      "XR_SESSION_STATE_SYNCHRONIZED", "XR_SESSION_STATE_STOPPING", "XR_SESSION_STATE_IDLE",
      "XR_SESSION_STATE_EXITING"};
  EXPECT_EQ(rec.state_names(), expected);
  EXPECT_TRUE(rec.errors.empty()) << rec.errors.front().function << " " << rec.errors.front().result;
  ASSERT_EQ(rec.swapchains.size(), 2u);
  for (const auto& s : rec.swapchains) {
    EXPECT_EQ(s.width, 256u);
    EXPECT_EQ(s.height, 256u);
    EXPECT_EQ(s.array_size, 1u);
    EXPECT_EQ(s.format, VK_FORMAT_R8G8B8A8_UNORM);
  }
  EXPECT_EQ(rec.frames_submitted, rec.frames.size());
  uint32_t with_layers = 0;
  for (const auto& f : rec.frames)
    if (f.layers == 1) {
      ++with_layers;
      EXPECT_EQ(f.projection_views, 2u);
      EXPECT_EQ(f.depth_infos, 0u);
    }
  EXPECT_EQ(with_layers, static_cast<uint32_t>(c.frames_rendered));
  ASSERT_EQ(rec.captures.size(), 2u * with_layers);
  for (const auto& cap : rec.captures) {
    ASSERT_TRUE(std::filesystem::exists(cap.file)) << cap.file;
    if (cap.view == 0) expect_png_colour(cap.file, 256, 256, {255, 128, 0, 255});
    else expect_png_colour(cap.file, 256, 256, {0, 64, 255, 255});
  }
}

TEST(XrsimLifecycle, MultiviewWithDepthAndBgraCapture) {
  TestEnv env("multiview");
  Client::Options o;
  o.multiview = true;
  o.depth = true;
  o.colour_format = VK_FORMAT_B8G8R8A8_UNORM;
  Client c(o);
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kColours), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.frame(kColours), XR_SUCCESS) << c.error;
  EXPECT_TRUE(c.validation_messages.empty()) << joined(c.validation_messages);
  EXPECT_TRUE(c.layer_messages().empty()) << joined(c.layer_messages());
  c.destroy_all();

  xrsim::Record rec = read(env);
  ASSERT_EQ(rec.swapchains.size(), 2u);
  EXPECT_EQ(rec.swapchains[0].array_size, 2u);
  EXPECT_EQ(rec.swapchains[1].format, VK_FORMAT_D32_SFLOAT);
  ASSERT_FALSE(rec.frames.empty());
  EXPECT_EQ(rec.frames.back().depth_infos, 2u);
  ASSERT_GE(rec.captures.size(), 2u);
  for (const auto& cap : rec.captures) {
    if (cap.view == 0) expect_png_colour(cap.file, 256, 256, {255, 128, 0, 255});
    else expect_png_colour(cap.file, 256, 256, {0, 64, 255, 255});
  }
}

TEST(XrsimLifecycle, SrgbImagesAreCapturedAsStored) {
  TestEnv env("srgb");
  Client::Options o;
  o.colour_format = VK_FORMAT_R8G8B8A8_SRGB;
  Client c(o);
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  const Colours grey = {{{0.5f, 0.5f, 0.5f, 1.0f}, {0.5f, 0.5f, 0.5f, 1.0f}}};
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, grey), XR_SUCCESS) << c.error;
  ASSERT_EQ(c.frame(grey), XR_SUCCESS) << c.error;
  c.destroy_all();
  xrsim::Record rec = read(env);
  ASSERT_FALSE(rec.captures.empty());
  // Linear 0.5 encodes to sRGB 188.
  expect_png_colour(rec.captures.back().file, 256, 256, {188, 188, 188, 255}, 1);
}

TEST(XrsimLifecycle, ViewsAndSpacesFollowTheScript) {
  TestEnv env("views");
  env.set_script(
      "view_size 128 96\n"
      "frame 0\n"
      "head 0 1.7 0.5\n"
      "ipd 0.07\n"
      "frame 4\n"
      "head 1 1.5 0  0 0.7071068 0 0.7071068  # turned 90 degrees left\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  EXPECT_EQ(c.view_config.recommendedImageRectWidth, 128u);
  EXPECT_EQ(c.view_config.recommendedImageRectHeight, 96u);
  ASSERT_EQ(c.app_space_type, XR_REFERENCE_SPACE_TYPE_STAGE);

  auto locate_views = [&](XrTime t, std::array<XrView, 2>& views) {
    XrViewLocateInfo li{XR_TYPE_VIEW_LOCATE_INFO};
    li.viewConfigurationType = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
    li.displayTime = t;
    li.space = c.app_space;
    XrViewState vs{XR_TYPE_VIEW_STATE};
    views = {{{XR_TYPE_VIEW}, {XR_TYPE_VIEW}}};
    uint32_t n = 0;
    ASSERT_EQ(xrLocateViews(c.session, &li, &vs, 2, &n, views.data()), XR_SUCCESS);
    ASSERT_EQ(n, 2u);
    EXPECT_TRUE(vs.viewStateFlags & XR_VIEW_STATE_POSITION_VALID_BIT);
  };
  std::array<XrView, 2> views;
  locate_views(xrsim::kFirstDisplayTime, views);
  EXPECT_NEAR(views[0].pose.position.x, -0.035f, 1e-5);
  EXPECT_NEAR(views[1].pose.position.x, 0.035f, 1e-5);
  EXPECT_NEAR(views[0].pose.position.y, 1.7f, 1e-5);
  EXPECT_NEAR(views[0].pose.position.z, 0.5f, 1e-5);
  EXPECT_LT(views[0].fov.angleLeft, 0.0f);
  EXPECT_GT(views[0].fov.angleRight, 0.0f);

  // Frame 4: turned left, so the left eye is in front (+z) of the head.
  locate_views(xrsim::kFirstDisplayTime + 4 * xrsim::kFramePeriod, views);
  EXPECT_NEAR(views[0].pose.position.x, 1.0f, 1e-4);
  EXPECT_NEAR(views[0].pose.position.z, 0.035f, 1e-4);
  EXPECT_NEAR(views[1].pose.position.z, -0.035f, 1e-4);

  // VIEW located in LOCAL: LOCAL's origin is kLocalOriginHeight above the floor.
  XrReferenceSpaceCreateInfo si{XR_TYPE_REFERENCE_SPACE_CREATE_INFO};
  si.poseInReferenceSpace.orientation.w = 1;
  si.referenceSpaceType = XR_REFERENCE_SPACE_TYPE_VIEW;
  XrSpace view = XR_NULL_HANDLE, local = XR_NULL_HANDLE;
  ASSERT_EQ(xrCreateReferenceSpace(c.session, &si, &view), XR_SUCCESS);
  si.referenceSpaceType = XR_REFERENCE_SPACE_TYPE_LOCAL;
  ASSERT_EQ(xrCreateReferenceSpace(c.session, &si, &local), XR_SUCCESS);
  XrSpaceLocation loc{XR_TYPE_SPACE_LOCATION};
  ASSERT_EQ(xrLocateSpace(view, local, xrsim::kFirstDisplayTime, &loc), XR_SUCCESS);
  EXPECT_TRUE(loc.locationFlags & XR_SPACE_LOCATION_POSITION_VALID_BIT);
  EXPECT_NEAR(loc.pose.position.y, 1.7f - xrsim::kLocalOriginHeight, 1e-5);
  EXPECT_NEAR(loc.pose.position.z, 0.5f, 1e-5);
  EXPECT_EQ(xrLocateSpace(view, local, 0, &loc), XR_ERROR_TIME_INVALID);
  EXPECT_EQ(xrDestroySpace(view), XR_SUCCESS);
  EXPECT_EQ(xrDestroySpace(local), XR_SUCCESS);
  EXPECT_TRUE(c.validation_messages.empty()) << joined(c.validation_messages);
  EXPECT_TRUE(c.layer_messages().empty()) << joined(c.layer_messages());
}

TEST(XrsimLifecycle, StageCanBeDisabledForTheLocalFallback) {
  TestEnv env("nostage");
  env.set_script("stage off\n");
  Client c;
  ASSERT_EQ(c.start(), XR_SUCCESS) << c.error;
  EXPECT_EQ(c.app_space_type, XR_REFERENCE_SPACE_TYPE_LOCAL);
  XrReferenceSpaceCreateInfo si{XR_TYPE_REFERENCE_SPACE_CREATE_INFO};
  si.referenceSpaceType = XR_REFERENCE_SPACE_TYPE_STAGE;
  si.poseInReferenceSpace.orientation.w = 1;
  XrSpace stage = XR_NULL_HANDLE;
  EXPECT_EQ(xrCreateReferenceSpace(c.session, &si, &stage), XR_ERROR_REFERENCE_SPACE_UNSUPPORTED);
  ASSERT_EQ(c.run_until(XR_SESSION_STATE_FOCUSED, 10, kColours), XR_SUCCESS) << c.error;
}

TEST(XrsimLifecycle, BadScriptFailsInstanceCreationWithTheLine) {
  TestEnv env("badscript");
  env.set_script("frame 0\nhead 0 1.6\n");
  Client c;
  testing::internal::CaptureStderr();
  XrResult r = c.create_instance();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r, XR_ERROR_INITIALIZATION_FAILED) << c.error;
  EXPECT_NE(err.find("script.txt:2:"), std::string::npos) << err;
}

}  // namespace
