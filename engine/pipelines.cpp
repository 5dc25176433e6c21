#include "engine/pipelines.h"

#include <array>
#include <cstddef>

#include "engine/device.h"

namespace nnxr::embedded {
extern const unsigned char neurons_vert_spv[];
extern const std::size_t neurons_vert_spv_size;
extern const unsigned char neurons_frag_spv[];
extern const std::size_t neurons_frag_spv_size;
extern const unsigned char connections_vert_spv[];
extern const std::size_t connections_vert_spv_size;
extern const unsigned char connections_frag_spv[];
extern const std::size_t connections_frag_spv_size;
extern const unsigned char overlay_vert_spv[];
extern const std::size_t overlay_vert_spv_size;
extern const unsigned char overlay_frag_spv[];
extern const std::size_t overlay_frag_spv_size;
extern const unsigned char text_vert_spv[];
extern const std::size_t text_vert_spv_size;
extern const unsigned char text_frag_spv[];
extern const std::size_t text_frag_spv_size;
extern const unsigned char tiles_vert_spv[];
extern const std::size_t tiles_vert_spv_size;
extern const unsigned char tiles_frag_spv[];
extern const std::size_t tiles_frag_spv_size;
}  // namespace nnxr::embedded

namespace nnxr::engine {
namespace {

ShaderModule create_module(VkDevice device, const unsigned char* code, std::size_t size) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = size;
  info.pCode = reinterpret_cast<const uint32_t*>(code);  // embedded data is 16-byte aligned
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(device, &info, nullptr, &module), "vkCreateShaderModule");
  return ShaderModule(device, module);
}

DescriptorSetLayout create_set_layout(VkDevice device, std::initializer_list<VkDescriptorType> types) {
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (VkDescriptorType type : types)
    bindings.push_back({uint32_t(bindings.size()), type, 1, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT,
                        nullptr});
  VkDescriptorSetLayoutCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  info.bindingCount = uint32_t(bindings.size());
  info.pBindings = bindings.data();
  VkDescriptorSetLayout layout = VK_NULL_HANDLE;
  check(vkCreateDescriptorSetLayout(device, &info, nullptr, &layout), "vkCreateDescriptorSetLayout");
  return DescriptorSetLayout(device, layout);
}

struct PipelineDesc {
  VkShaderModule vert, frag;
  VkPrimitiveTopology topology;
  bool depth_test, depth_write, blend, highlight;
};

Pipeline create_pipeline(const Device& device, const RendererConfig& config, VkPipelineLayout layout,
                         const PipelineDesc& d) {
  const VkBool32 highlight = d.highlight ? VK_TRUE : VK_FALSE;
  VkSpecializationMapEntry entry{0, 0, sizeof(VkBool32)};
  VkSpecializationInfo spec{1, &entry, sizeof highlight, &highlight};
  std::array<VkPipelineShaderStageCreateInfo, 2> stages{};
  stages[0] = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
  stages[0].module = d.vert;
  stages[0].pName = "main";
  stages[0].pSpecializationInfo = &spec;
  stages[1] = stages[0];
  stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
  stages[1].module = d.frag;

  VkPipelineVertexInputStateCreateInfo vertex_input{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
  VkPipelineInputAssemblyStateCreateInfo assembly{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
  assembly.topology = d.topology;
  VkPipelineViewportStateCreateInfo viewport{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
  viewport.viewportCount = 1;
  viewport.scissorCount = 1;
  VkPipelineRasterizationStateCreateInfo raster{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
  raster.polygonMode = VK_POLYGON_MODE_FILL;
  raster.cullMode = VK_CULL_MODE_NONE;
  raster.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
  raster.lineWidth = 1.0f;
  VkPipelineMultisampleStateCreateInfo multisample{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
  multisample.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
  VkPipelineDepthStencilStateCreateInfo depth{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
  depth.depthTestEnable = d.depth_test ? VK_TRUE : VK_FALSE;
  depth.depthWriteEnable = d.depth_write ? VK_TRUE : VK_FALSE;
  depth.depthCompareOp = VK_COMPARE_OP_LESS_OR_EQUAL;
  VkPipelineColorBlendAttachmentState attachment{};
  attachment.colorWriteMask =
      VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
  if (d.blend) {
    attachment.blendEnable = VK_TRUE;
    attachment.srcColorBlendFactor = VK_BLEND_FACTOR_SRC_ALPHA;
    attachment.dstColorBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
    attachment.colorBlendOp = VK_BLEND_OP_ADD;
    attachment.srcAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
    attachment.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
    attachment.alphaBlendOp = VK_BLEND_OP_ADD;
  }
  VkPipelineColorBlendStateCreateInfo blend{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
  blend.attachmentCount = 1;
  blend.pAttachments = &attachment;
  const VkDynamicState dynamic_states[] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
  VkPipelineDynamicStateCreateInfo dynamic{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
  dynamic.dynamicStateCount = 2;
  dynamic.pDynamicStates = dynamic_states;

  VkPipelineRenderingCreateInfo rendering{VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO};
  rendering.viewMask = config.view_count > 1 ? (1u << config.view_count) - 1 : 0;
  rendering.colorAttachmentCount = 1;
  rendering.pColorAttachmentFormats = &config.colour_format;
  rendering.depthAttachmentFormat = config.depth_format;

  VkGraphicsPipelineCreateInfo info{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
  info.pNext = &rendering;
  info.stageCount = uint32_t(stages.size());
  info.pStages = stages.data();
  info.pVertexInputState = &vertex_input;
  info.pInputAssemblyState = &assembly;
  info.pViewportState = &viewport;
  info.pRasterizationState = &raster;
  info.pMultisampleState = &multisample;
  info.pDepthStencilState = &depth;
  info.pColorBlendState = &blend;
  info.pDynamicState = &dynamic;
  info.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  check(vkCreateGraphicsPipelines(device.get(), VK_NULL_HANDLE, 1, &info, nullptr, &pipeline),
        "vkCreateGraphicsPipelines");
  return Pipeline(device.get(), pipeline);
}

}  // namespace

Pipelines create_pipelines(const Device& device, const RendererConfig& config) {
  using namespace nnxr::embedded;
  const VkDevice d = device.get();
  Pipelines p;
  p.frame_layout = create_set_layout(
      d, {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER});
  p.region_layout = create_set_layout(d, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER});
  const VkDescriptorSetLayout sets[] = {p.frame_layout.get(), p.region_layout.get()};
  VkPushConstantRange push{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(PushConstants)};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 2;
  layout.pSetLayouts = sets;
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &push;
  VkPipelineLayout handle = VK_NULL_HANDLE;
  check(vkCreatePipelineLayout(d, &layout, nullptr, &handle), "vkCreatePipelineLayout");
  p.layout = PipelineLayout(d, handle);

  ShaderModule nv = create_module(d, neurons_vert_spv, neurons_vert_spv_size);
  ShaderModule nf = create_module(d, neurons_frag_spv, neurons_frag_spv_size);
  ShaderModule cv = create_module(d, connections_vert_spv, connections_vert_spv_size);
  ShaderModule cf = create_module(d, connections_frag_spv, connections_frag_spv_size);
  const VkPrimitiveTopology tri = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, line = VK_PRIMITIVE_TOPOLOGY_LINE_LIST;
  p.neurons = create_pipeline(device, config, p.layout.get(), {nv.get(), nf.get(), tri, true, true, false, false});
  p.connections = create_pipeline(device, config, p.layout.get(), {cv.get(), cf.get(), line, true, false, true, false});
  p.highlight_neurons =
      create_pipeline(device, config, p.layout.get(), {nv.get(), nf.get(), tri, false, false, false, true});
  p.highlight_connections =
      create_pipeline(device, config, p.layout.get(), {cv.get(), cf.get(), line, false, false, true, true});
  ShaderModule ov = create_module(d, overlay_vert_spv, overlay_vert_spv_size);
  ShaderModule of = create_module(d, overlay_frag_spv, overlay_frag_spv_size);
  p.overlay_lines =
      create_pipeline(device, config, p.layout.get(), {ov.get(), of.get(), line, true, false, true, false});
  p.overlay_triangles =
      create_pipeline(device, config, p.layout.get(), {ov.get(), of.get(), tri, true, false, true, false});

  p.text_set_layout = create_set_layout(d, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER});
  const VkDescriptorSetLayout text_sets[] = {p.frame_layout.get(), p.text_set_layout.get()};
  VkPushConstantRange text_push{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(TextPush)};
  layout.pSetLayouts = text_sets;
  layout.pPushConstantRanges = &text_push;
  check(vkCreatePipelineLayout(d, &layout, nullptr, &handle), "vkCreatePipelineLayout");
  p.text_layout = PipelineLayout(d, handle);
  ShaderModule tv = create_module(d, text_vert_spv, text_vert_spv_size);
  ShaderModule tf = create_module(d, text_frag_spv, text_frag_spv_size);
  p.text = create_pipeline(device, config, p.text_layout.get(), {tv.get(), tf.get(), tri, false, false, true, false});
  VkPushConstantRange tile_push{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(TilePushConstants)};
  VkPipelineLayoutCreateInfo tiles_layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  tiles_layout.setLayoutCount = 1;
  tiles_layout.pSetLayouts = sets;
  tiles_layout.pushConstantRangeCount = 1;
  tiles_layout.pPushConstantRanges = &tile_push;
  check(vkCreatePipelineLayout(d, &tiles_layout, nullptr, &handle), "vkCreatePipelineLayout");
  p.tiles_layout = PipelineLayout(d, handle);
  ShaderModule tiv = create_module(d, tiles_vert_spv, tiles_vert_spv_size);
  ShaderModule tif = create_module(d, tiles_frag_spv, tiles_frag_spv_size);
  p.tiles = create_pipeline(device, config, p.tiles_layout.get(), {tiv.get(), tif.get(), tri, true, true, false, false});
  return p;
}

}  // namespace nnxr::engine
