// The application view's vector add (xferbench app vadd, seeds 000/003):
// c[i] = a[i] + b[i] on 32-bit unsigned integers, wrapping on overflow exactly
// as the CPU baseline (vadd_cpu) does, so the two results compare bit for bit.
//
// Work items stride through the vectors, so a launch of bounded size covers
// any n; neighbouring work items touch neighbouring elements, which is what a
// GPU needs to coalesce the loads.

__kernel void vadd(__global const uint* restrict a, __global const uint* restrict b, __global uint* restrict c,
                   ulong n) {
  const ulong stride = get_global_size(0);
  for (ulong i = get_global_id(0); i < n; i += stride) c[i] = a[i] + b[i];
}
