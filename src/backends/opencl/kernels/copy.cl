// Copy kernels for the kernel-host and kernel-device routes. Built at run time
// from this source (embedded into the binary at build time).
//
// Every buffer handed to these kernels starts at an allocation's base, which
// OpenCL aligns to at least CL_DEVICE_MEM_BASE_ADDR_ALIGN (>= 128 bytes in
// practice), so the bulk can move as 16-byte vectors; the last n % 16 bytes
// go one by one. Work items stride through the buffer so one launch of a
// bounded size handles any n.

__kernel void copy_bytes(__global const uchar* restrict src, __global uchar* restrict dst, ulong n) {
  const ulong vectors = n / 16;
  __global const uint4* restrict s = (__global const uint4*)src;
  __global uint4* restrict d = (__global uint4*)dst;
  const ulong stride = get_global_size(0);
  for (ulong i = get_global_id(0); i < vectors; i += stride) d[i] = s[i];
  if (get_global_id(0) == 0)
    for (ulong i = vectors * 16; i < n; ++i) dst[i] = src[i];
}
