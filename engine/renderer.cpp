#include "engine/renderer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/device.h"
#include "engine/pipelines.h"
#include "engine/text.h"

namespace nnxr::engine {

struct Renderer::Impl {
  const Device& device;
  RendererConfig config;
  Pipelines pipelines;
  DescriptorPool pool;
  struct Slot {
    MappedBuffer uniforms, highlight;
    MappedBuffer overlay;  // OverlayVertex × kMaxOverlayVertices: this slot's overlay triangles, then lines
    VkDescriptorSet set = VK_NULL_HANDLE;
    uint64_t highlight_version = 0;  // version of `highlight` written into this slot
  };
  std::vector<Slot> slots;
  VkDescriptorSet region_sets[SceneBuffers::kRegions]{};
  uint64_t region_table_ids[SceneBuffers::kRegions]{};  // the table each region set points at
  MappedBuffer atlas;  // the font's SDF atlas, written once
  uint32_t atlas_width = 0;
  VkDescriptorSet text_set = VK_NULL_HANDLE;  // the scene's text buffer and the atlas

  Highlight highlight;
  uint64_t highlight_version = 1;

  Impl(const Device& d, const SceneBuffers& scene, const RendererConfig& c)
      : device(d), config(c), pipelines(create_pipelines(d, c)) {
    const uint32_t frames = config.frames_in_flight;
    VkDescriptorPoolSize sizes[] = {
        {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, frames},
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * frames + SceneBuffers::kRegions + 2},
    };
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = frames + SceneBuffers::kRegions + 1;
    info.poolSizeCount = 2;
    info.pPoolSizes = sizes;
    VkDescriptorPool handle = VK_NULL_HANDLE;
    check(vkCreateDescriptorPool(d.get(), &info, nullptr, &handle), "vkCreateDescriptorPool");
    pool = DescriptorPool(d.get(), handle);

    slots.resize(frames);
    for (Slot& s : slots) {
      s.uniforms = create_mapped_buffer(d, sizeof(FrameUniforms), VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT);
      s.highlight = create_mapped_buffer(d, sizeof(HighlightHeader) + kMaxHighlight * sizeof(uint32_t),
                                         VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
      std::memset(s.highlight.mapped, 0, sizeof(HighlightHeader));
      s.overlay = create_mapped_buffer(d, kMaxOverlayVertices * sizeof(OverlayVertex), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
      s.set = allocate_set(pipelines.frame_layout.get());
      VkDescriptorBufferInfo buffers[] = {{s.uniforms.buffer.get(), 0, VK_WHOLE_SIZE},
                                          {s.highlight.buffer.get(), 0, VK_WHOLE_SIZE},
                                          {s.overlay.buffer.get(), 0, VK_WHOLE_SIZE}};
      write_set(s.set, {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER},
                buffers);
    }
    for (uint32_t r = 0; r < SceneBuffers::kRegions; ++r) {
      SceneBuffers::Region region = scene.region(r);
      region_sets[r] = allocate_set(pipelines.region_layout.get());
      // Only the table is a descriptor; the shaders reach the elements through the device
      // addresses in its header.
      VkDescriptorBufferInfo buffers[] = {{region.table, 0, VK_WHOLE_SIZE}};
      write_set(region_sets[r], {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER}, buffers);
      region_table_ids[r] = region.table_id;
    }
    const Font& font = Font::builtin();
    atlas = create_mapped_buffer(d, (font.atlas().size() + 3) & ~size_t(3), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    std::memcpy(atlas.mapped, font.atlas().data(), font.atlas().size());
    atlas_width = font.atlas_width();
    text_set = allocate_set(pipelines.text_set_layout.get());
    VkDescriptorBufferInfo text_buffers[] = {{scene.text().buffer(), 0, VK_WHOLE_SIZE},
                                             {atlas.buffer.get(), 0, VK_WHOLE_SIZE}};
    write_set(text_set, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER}, text_buffers);
  }

  // Points the region's set at the frame's table when the scene buffers grew it. No frame in
  // flight reads that region then (SceneBuffers replaces a table only once they are retired).
  void bind_table(const SceneFrame& scene) {
    if (region_table_ids[scene.region] == scene.table_id) return;
    VkDescriptorBufferInfo buffers[] = {{scene.table, 0, VK_WHOLE_SIZE}};
    write_set(region_sets[scene.region], {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER}, buffers);
    region_table_ids[scene.region] = scene.table_id;
  }

  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout) {
    VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    info.descriptorPool = pool.get();
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    check(vkAllocateDescriptorSets(device.get(), &info, &set), "vkAllocateDescriptorSets");
    return set;
  }

  void write_set(VkDescriptorSet set, std::initializer_list<VkDescriptorType> types, const VkDescriptorBufferInfo* infos) {
    std::vector<VkWriteDescriptorSet> writes;
    for (VkDescriptorType type : types) {
      VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstSet = set;
      w.dstBinding = uint32_t(writes.size());
      w.descriptorCount = 1;
      w.descriptorType = type;
      w.pBufferInfo = &infos[writes.size()];
      writes.push_back(w);
    }
    vkUpdateDescriptorSets(device.get(), uint32_t(writes.size()), writes.data(), 0, nullptr);
  }

  // Writes the highlight into the slot if it changed since the slot last saw it: O(highlight).
  void update_highlight(Slot& slot) {
    if (slot.highlight_version == highlight_version) return;
    HighlightHeader header;
    header.neuron_count = uint32_t(highlight.neurons.size());
    header.connection_count = uint32_t(highlight.connections.size());
    auto* base = static_cast<std::byte*>(slot.highlight.mapped);
    std::memcpy(base, &header, sizeof header);
    auto* items = reinterpret_cast<uint32_t*>(base + sizeof header);
    std::copy(highlight.neurons.begin(), highlight.neurons.end(), items);
    std::copy(highlight.connections.begin(), highlight.connections.end(), items + highlight.neurons.size());
    slot.highlight_version = highlight_version;
  }

  void draw_indirect(VkCommandBuffer cmd, VkBuffer buffer, VkDeviceSize offset, uint32_t count) {
    const uint32_t limit = std::max(1u, device.properties().limits.maxDrawIndirectCount);
    for (uint32_t first = 0; first < count; first += limit)
      vkCmdDrawIndirect(cmd, buffer, offset + VkDeviceSize(first) * sizeof(VkDrawIndirectCommand),
                        std::min(limit, count - first), sizeof(VkDrawIndirectCommand));
  }
};

Renderer::Renderer(const Device& device, const SceneBuffers& scene, const RendererConfig& config) {
  if (config.view_count < 1 || config.view_count > kMaxViews)
    throw std::invalid_argument("renderer: view_count must be 1 or 2");
  if (config.frames_in_flight < 1) throw std::invalid_argument("renderer: frames_in_flight must be at least 1");
  impl_ = std::make_unique<Impl>(device, scene, config);
}

Renderer::~Renderer() = default;

const RendererConfig& Renderer::config() const { return impl_->config; }

void Renderer::set_highlight(Highlight highlight) {
  const size_t total = highlight.neurons.size() + highlight.connections.size();
  if (total > kMaxHighlight) {
    const size_t keep_neurons = std::min(highlight.neurons.size(), size_t(kMaxHighlight));
    highlight.neurons.resize(keep_neurons);
    highlight.connections.resize(std::min(highlight.connections.size(), size_t(kMaxHighlight) - keep_neurons));
  }
  impl_->highlight = std::move(highlight);
  ++impl_->highlight_version;
}

void Renderer::clear_highlight() { set_highlight({}); }

void Renderer::record(VkCommandBuffer cmd, const RenderTarget& target, const SceneFrame& scene,
                      const FrameParams& params, uint32_t frame_slot) {
  Impl& m = *impl_;
  if (frame_slot >= m.slots.size()) throw std::out_of_range("renderer: frame slot out of range");
  Impl::Slot& slot = m.slots[frame_slot];

  // Uniforms. The neuron radius is in network metres; `world` scales it.
  FrameUniforms u{};
  for (uint32_t v = 0; v < kMaxViews; ++v) {
    u.view[v] = params.view[v];
    u.projection[v] = params.projection[v];
  }
  u.world = params.world;
  const float world_scale = std::cbrt(std::abs(glm::determinant(glm::mat3(params.world))));
  u.background = glm::vec4(params.background, 1.0f);
  u.sizes = glm::vec4(0.5f * params.neuron_size * world_scale, 0.5f * params.min_neuron_pixels,
                      float(target.extent.height), params.connection_alpha);
  u.fog = glm::vec4(params.fog_start, params.fog_end, params.point_fade_pixels, 0);
  u.panel[0] = params.panel_plane;
  u.panel[1] = params.menu_plane;
  u.canvas = glm::vec4(params.panel_canvas, params.menu_origin);
  std::memcpy(slot.uniforms.mapped, &u, sizeof u);

  const bool highlighted = scene.generation != 0 && m.highlight.generation == scene.generation &&
                           !(m.highlight.neurons.empty() && m.highlight.connections.empty());
  if (highlighted) m.update_highlight(slot);

  VkRenderingAttachmentInfo colour{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
  colour.imageView = target.colour;
  colour.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
  colour.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  colour.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  colour.clearValue.color = {{params.background.r, params.background.g, params.background.b, 1.0f}};
  VkRenderingAttachmentInfo depth{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
  depth.imageView = target.depth;
  depth.imageLayout = VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL;
  depth.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  depth.storeOp = target.store_depth ? VK_ATTACHMENT_STORE_OP_STORE : VK_ATTACHMENT_STORE_OP_DONT_CARE;
  depth.clearValue.depthStencil = {1.0f, 0};
  VkRenderingInfo rendering{VK_STRUCTURE_TYPE_RENDERING_INFO};
  rendering.renderArea = {{0, 0}, target.extent};
  rendering.layerCount = 1;
  rendering.viewMask = m.config.view_count > 1 ? (1u << m.config.view_count) - 1 : 0;
  rendering.colorAttachmentCount = 1;
  rendering.pColorAttachments = &colour;
  rendering.pDepthAttachment = &depth;
  m.device.begin_rendering(cmd, &rendering);

  VkViewport viewport{0, 0, float(target.extent.width), float(target.extent.height), 0, 1};
  VkRect2D scissor{{0, 0}, target.extent};
  vkCmdSetViewport(cmd, 0, 1, &viewport);
  vkCmdSetScissor(cmd, 0, 1, &scissor);
  if (params.images && scene.images.generation != 0 && scene.images.tile_count != 0) {
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.tiles_layout.get(), 0, 1, &slot.set, 0,
                            nullptr);
    TilePushConstants push;
    push.image = scene.images.address;
    push.colour_range = uint32_t(params.colour_range);
    push.value_range = params.value_range;
    push.dim = highlighted ? params.dim_unselected : 1.0f;
    push.threshold_mode = params.image_threshold_absolute ? 1 : 0;
    push.threshold = params.image_threshold;
    push.outside = params.image_dim_outside ? 1 : 0;
    push.layer_min = params.image_layer_min;
    push.layer_max = params.image_layer_max;
    push.filter = scene.images.filter;
    vkCmdPushConstants(cmd, m.pipelines.tiles_layout.get(), VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
                       sizeof push, &push);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.tiles.get());
    vkCmdDraw(cmd, 6 * scene.images.tile_count, 1, 0, 0);
  }
  if (scene.generation != 0 && scene.segment_count != 0) {
    m.bind_table(scene);
    const VkDescriptorSet sets[] = {slot.set, m.region_sets[scene.region]};
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.layout.get(), 0, 2, sets, 0, nullptr);
    PushConstants push;
    push.colour_range = uint32_t(params.colour_range);
    push.value_range = params.value_range;
    push.dim = highlighted ? params.dim_unselected : 1.0f;
    vkCmdPushConstants(cmd, m.pipelines.layout.get(), VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
                       sizeof push, &push);
    if (params.neurons) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.neurons.get());
      m.draw_indirect(cmd, scene.commands, scene.neuron_commands, scene.segment_count);
    }
    if (params.connections) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.connections.get());
      m.draw_indirect(cmd, scene.commands, scene.connection_commands, scene.segment_count);
    }
    if (highlighted) {
      if (!m.highlight.connections.empty()) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.highlight_connections.get());
        vkCmdDraw(cmd, 2 * uint32_t(m.highlight.connections.size()), 1, 0, 0);
      }
      if (!m.highlight.neurons.empty()) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.highlight_neurons.get());
        vkCmdDraw(cmd, 6 * uint32_t(m.highlight.neurons.size()), 1, 0, 0);
      }
    }
  }

  // Overlay: copied into this slot's buffer (the slot's previous frame has completed).
  const uint32_t lines = uint32_t(std::min<size_t>(params.overlay_lines.size() & ~size_t(1), kMaxOverlayVertices));
  const uint32_t triangles =
      uint32_t(std::min<size_t>(params.overlay_triangles.size() / 3 * 3, (kMaxOverlayVertices - lines) / 3 * 3));
  if (lines + triangles > 0) {
    auto* vertices = static_cast<OverlayVertex*>(slot.overlay.mapped);
    std::copy_n(params.overlay_triangles.data(), triangles, vertices);
    std::copy_n(params.overlay_lines.data(), lines, vertices + triangles);
    // Vertices are fetched by gl_VertexIndex from the slot's storage buffer (set 0, binding 2).
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.layout.get(), 0, 1, &slot.set, 0, nullptr);
    if (triangles) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.overlay_triangles.get());
      vkCmdDraw(cmd, triangles, 1, 0, 0);
    }
    if (lines) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.overlay_lines.get());
      vkCmdDraw(cmd, lines, 1, triangles, 0);
    }
  }

  // Text: labels, legend and panels, one instanced draw of the text the frame acquired.
  if (params.text && scene.text.count > 0) {
    const VkDescriptorSet sets[] = {slot.set, m.text_set};
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.text_layout.get(), 0, 2, sets, 0, nullptr);
    TextPush push;
    push.viewport[0] = float(target.extent.width);
    push.viewport[1] = float(target.extent.height);
    push.world_scale = world_scale;
    push.atlas_width = m.atlas_width;
    push.screen = params.panels == PanelPlacement::Hidden ? 0u
                  : text_screen::kOn | (params.panels == PanelPlacement::Planes ? text_screen::kPlanes : 0u) |
                        (params.menu ? text_screen::kMenu : 0u);
    push.menu_scale = params.menu_scale;
    push.hover[0] = params.menu_hover.x;
    push.hover[1] = params.menu_hover.y;
    vkCmdPushConstants(cmd, m.pipelines.text_layout.get(), VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
                       sizeof push, &push);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, m.pipelines.text.get());
    vkCmdDraw(cmd, 6, scene.text.count, 0, scene.text.first);
  }
  m.device.end_rendering(cmd);
}

}  // namespace nnxr::engine
