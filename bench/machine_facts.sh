# shellcheck shell=bash
# Sourced by the staged copier's device studies (staged_roofline.sh,
# staged_gap.sh): what a result's reader needs to know of the machine, in one
# file beside the results, and its headline lines on the console.
#
#   . bench/machine_facts.sh; machine_facts "$work/machine.txt"
machine_facts() {
  {
    lscpu
    echo; echo "# caches (cpu0, sysfs)"
    for d in /sys/devices/system/cpu/cpu0/cache/index*; do
      echo "L$(cat "$d/level") $(cat "$d/type") $(cat "$d/size") shared_cpu_list=$(cat "$d/shared_cpu_list")"
    done
    echo; echo "# uncore memory controllers"; ls -d /sys/bus/event_source/devices/uncore_imc* 2>/dev/null || echo none
    echo "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)"
    echo "thp enabled: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
    echo "thp defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
    grep -E "^(MemTotal|HugePages_Total|Hugepagesize)" /proc/meminfo
    echo; nvidia-smi --query-gpu=name,pci.bus_id,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
    numactl -H 2>/dev/null || echo "numactl: not installed"
  } >"$1" 2>&1
  grep -E "^(Model name|CPU\(s\)|L3|NUMA node\(s\))|^L[0-9]|^thp|^NVIDIA|H100|H200" "$1"
}
