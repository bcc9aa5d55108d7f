#include "results/callgrind_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "loadlab/shared/folded_stacks.hpp"
#include "loadlab/shared/json_input.hpp"

namespace loadlab::controller {

namespace {

constexpr double kLeastGrowth = 0.5;  // instructions per request: less is not what grew

// "(12) name" defines name 12, "(12)" uses it, "name" is itself.
std::string compressed_name(const std::string& value, std::map<std::string, std::string>& names) {
  if (value.empty() || value[0] != '(') return value;
  const size_t close = value.find(')');
  if (close == std::string::npos) return value;
  const std::string id = value.substr(0, close + 1);
  if (close + 1 < value.size()) return names[id] = value.substr(value.find_first_not_of(' ', close + 1));
  auto it = names.find(id);
  return it == names.end() ? id : it->second;
}

bool cost_line(const std::string& line) {
  return !line.empty() && (std::isdigit(static_cast<unsigned char>(line[0])) || line[0] == '+' ||
                           line[0] == '-' || line[0] == '*');
}

// The first event's count of a cost line: after the positions, or 0 when it has none.
double first_event(const std::string& line, size_t positions) {
  std::istringstream in(line);
  std::string token;
  for (size_t i = 0; i < positions && in >> token;) ++i;
  double value = 0;
  return in >> value ? value : 0;
}

}  // namespace

FunctionCosts read_callgrind(std::istream& in) {
  FunctionCosts out;
  std::map<std::string, std::string> names;  // fn and cfn share one table
  size_t positions = 1;
  FunctionCost* current = nullptr;
  bool call_cost = false;  // the next cost line is a call's inclusive cost
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("positions:", 0) == 0) {
      std::istringstream p(line.substr(10));
      positions = 0;
      for (std::string t; p >> t;) ++positions;
    } else if (line.rfind("fn=", 0) == 0) {
      current = &out[compressed_name(line.substr(3), names)];
      call_cost = false;
    } else if (line.rfind("cfn=", 0) == 0) {
      compressed_name(line.substr(4), names);  // may define a name
    } else if (line.rfind("calls=", 0) == 0) {
      call_cost = true;
    } else if (cost_line(line) && current) {
      const double v = first_event(line, positions);
      current->inclusive += v;
      if (!call_cost) current->self += v;
      call_cost = false;
    }
  }
  return out;
}

FunctionCosts mean_callgrind(const std::vector<std::string>& files) {
  FunctionCosts sum;
  size_t read = 0;
  for (auto& f : files) {
    std::ifstream in(f);
    if (!in) continue;
    ++read;
    for (auto& [name, cost] : read_callgrind(in)) {
      sum[name].self += cost.self;
      sum[name].inclusive += cost.inclusive;
    }
  }
  for (auto& [name, cost] : sum) {
    cost.self /= static_cast<double>(read);
    cost.inclusive /= static_cast<double>(read);
  }
  return sum;
}

std::optional<FunctionCosts> perf_costs(const std::filesystem::path& folder, const v1::Repetition& r) {
  const auto& p = r.server().profile();
  if (p.file().empty() || p.frequency_hz() == 0 || r.requests() == 0) return std::nullopt;
  FoldedStacks stacks;
  try {
    stacks = parse_folded(read_text_file((folder / p.file()).string()));
  } catch (const std::exception&) {
    return std::nullopt;  // a folder moved without its profiles: no figure from it
  }
  // Samples to CPU µs per request: the window's CPU time, which the agent measured exactly,
  // shared among the samples (perf's cpu-clock misses part of a process that runs in short
  // bursts); from the frequency where there is no CPU time.
  const uint64_t samples = p.samples() > 0 ? p.samples() : total_samples(stacks);  // the dropped ones too
  const double cpu_us = r.server().cpu_pct() / 100 * r.server().window_s() * 1e6;
  const double us =
      (cpu_us > 0 && samples > 0 ? cpu_us / static_cast<double>(samples) : 1e6 / p.frequency_hz()) /
      static_cast<double>(r.requests());
  FunctionCosts costs;
  for (const auto& [name, c] : function_samples(stacks))
    costs[name] = {static_cast<double>(c.self) * us, static_cast<double>(c.total) * us};
  return costs;
}

std::vector<v1::FunctionGrowth> what_grew(const FunctionCosts& a, const FunctionCosts& b, double requests,
                                          size_t top, const std::string& unit) {
  std::vector<v1::FunctionGrowth> out;
  const double per = requests > 0 ? requests : 1;
  double least = kLeastGrowth;
  if (unit == kCpuUsUnit) {
    double whole = 0;
    for (const auto& [name, cost] : b) whole += cost.self;
    least = 0.01 * whole / per;
  }
  for (auto& [name, cb] : b) {
    const auto it = a.find(name);
    const FunctionCost ca = it == a.end() ? FunctionCost{} : it->second;
    if ((cb.self - ca.self) / per < least) continue;
    v1::FunctionGrowth g;
    g.set_function(name);
    g.set_unit(unit);
    g.set_self_a(ca.self / per);
    g.set_self_b(cb.self / per);
    g.set_inclusive_a(ca.inclusive / per);
    g.set_inclusive_b(cb.inclusive / per);
    out.push_back(g);
  }
  std::sort(out.begin(), out.end(), [](const v1::FunctionGrowth& x, const v1::FunctionGrowth& y) {
    return x.self_b() - x.self_a() > y.self_b() - y.self_a();
  });
  if (out.size() > top) out.resize(top);
  return out;
}

std::string grew_text(const std::vector<v1::FunctionGrowth>& grew, size_t names) {
  std::string text;
  for (size_t i = 0; i < grew.size() && i < names; ++i)
    text += fmt::format(fmt::runtime(grew[i].unit() == kCpuUsUnit ? "{}{} {:+.2f}" : "{}{} {:+.0f}"),
                        i ? ", " : "", grew[i].function(), grew[i].self_b() - grew[i].self_a());
  if (text.empty()) return text;
  return grew[0].unit() == kCpuUsUnit ? "grew most (CPU µs per request, self, from perf's samples): " + text
                                      : "grew most (instructions per request, self): " + text;
}

}  // namespace loadlab::controller
