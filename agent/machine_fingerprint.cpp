#include "loadlab/agent/machine_fingerprint.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "loadlab/shared/cpu_list.hpp"

namespace loadlab::agent {

namespace {

// The first line of a small file, without its newline; "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// The value of the first "key<tabs>: value" line of /proc/cpuinfo with this key.
std::string cpuinfo(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos || line.find_first_not_of(" \t", key.size()) != colon) continue;
    auto v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

uint32_t count_of(const std::string& list) {
  auto l = CpuList::parse(list);
  return l ? l->size() : 0;
}

// "on", "off" or "": the generic cpufreq boost switch, else intel_pstate's no_turbo.
std::string boost(const std::string& cpu_dir) {
  auto b = first_line(cpu_dir + "/cpufreq/boost");
  if (b == "1") return "on";
  if (b == "0") return "off";
  auto no_turbo = first_line(cpu_dir + "/intel_pstate/no_turbo");
  if (no_turbo == "1") return "off";
  if (no_turbo == "0") return "on";
  return "";
}

}  // namespace

v1::MachineFingerprint read_fingerprint(const std::string& proc_root, const std::string& sys_root) {
  v1::MachineFingerprint f;
  std::ifstream in(proc_root + "/cpuinfo");
  std::string info((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  f.set_cpu_model(cpuinfo(info, "model name"));
  const std::string flags = " " + cpuinfo(info, "flags") + " ";
  f.set_virtual_machine(flags.find(" hypervisor ") != std::string::npos);
  const std::string cpu_dir = sys_root + "/devices/system/cpu";
  uint32_t online = count_of(first_line(cpu_dir + "/online"));
  f.set_cpus(online ? online : static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  uint32_t siblings = count_of(first_line(cpu_dir + "/cpu0/topology/thread_siblings_list"));
  f.set_threads_per_core(siblings ? siblings : 1);
  f.set_governor(first_line(cpu_dir + "/cpu0/cpufreq/scaling_governor"));
  f.set_boost(boost(cpu_dir));
  if (proc_root == "/proc") {
    utsname u{};
    uname(&u);
    f.set_kernel(u.release);
  } else {
    f.set_kernel(first_line(proc_root + "/sys/kernel/osrelease"));
  }
  return f;
}

}  // namespace loadlab::agent
