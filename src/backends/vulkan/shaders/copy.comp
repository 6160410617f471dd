#version 450
// Copies a byte range between two storage buffers, 32-bit words across the
// grid (each invocation striding over the whole range), then the last 1 to 3
// bytes by the first invocation alone, leaving the destination's bytes past
// the range as they were (little-endian: a word's low bytes come first).
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer src_words { uint src[]; };
layout(std430, set = 0, binding = 1) buffer dst_words { uint dst[]; };
layout(push_constant) uniform range { uint words; uint tail_bytes; } r;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < r.words; i += stride) dst[i] = src[i];
  if (gl_GlobalInvocationID.x == 0u && r.tail_bytes != 0u) {
    const uint mask = (1u << (8u * r.tail_bytes)) - 1u;
    dst[r.words] = (dst[r.words] & ~mask) | (src[r.words] & mask);
  }
}
