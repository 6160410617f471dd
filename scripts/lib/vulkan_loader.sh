# Sourced (not run) from the repository root by the GPU machine's scripts,
# gpu_check.sh and gpu_vulkan.sh: the Vulkan loader and headers are not
# installed there. Where the lead carried Debian's packages in .gl/
# (libvulkan1, libvulkan-dev, glslc, libshaderc1; see the device README) they
# are unpacked into / (nothing else is), before the build, so that the Vulkan
# backend is built. Then, unless the caller named a driver, NVIDIA's ICD is
# named in VK_DRIVER_FILES: the loader's own search would not find it (the
# driver's folder is /usr/local/nvidia, outside that search).
# Sets vulkan_loader_named_nvidia: 1 when it named NVIDIA's ICD, else 0.
vulkan_loader_named_nvidia=0
if ls .gl/*.deb >/dev/null 2>&1; then
  for vulkan_loader_deb in .gl/*.deb; do dpkg -x "$vulkan_loader_deb" /; done
  ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  vulkan_loader_named_nvidia=1
fi
