#include "loadlab/shared/folded_stacks.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <string>
#include <vector>

#include "loadlab/shared/input_error.hpp"

namespace loadlab {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "[kernel.kallsyms]" and "/usr/lib/x86_64-linux-gnu/libc.so.6" as a frame's name: its file
// name in brackets.
std::string dso_name(std::string_view dso) {
  if (dso.size() >= 2 && dso.front() == '[' && dso.back() == ']') return std::string(dso);
  const auto slash = dso.rfind('/');
  std::string name = "[";
  name += slash == std::string_view::npos ? dso : dso.substr(slash + 1);
  name += ']';
  return name;
}

// One frame line, "ADDRESS SYMBOL+OFFSET (DSO)": the frame's name. A symbol may hold spaces
// (C++ signatures), so the DSO is the last parenthesized part and the address the first word.
std::string frame_name(std::string_view line) {
  line = trim(line);
  const auto space = line.find(' ');
  std::string_view rest = space == std::string_view::npos ? std::string_view() : trim(line.substr(space + 1));
  std::string_view dso;
  if (!rest.empty() && rest.back() == ')') {
    const auto open = rest.rfind(" (");
    if (open != std::string_view::npos) {
      dso = rest.substr(open + 2, rest.size() - open - 3);
      rest = trim(rest.substr(0, open));
    }
  }
  const auto plus = rest.rfind("+0x");
  if (plus != std::string_view::npos) rest = rest.substr(0, plus);
  std::string name =
      rest.empty() || rest == "[unknown]" ? dso_name(dso.empty() ? "unknown" : dso) : std::string(rest);
  for (char& c : name)
    if (c == ';' || c == '\n') c = ':';  // a frame name holds no separator
  if (dso == "[kernel.kallsyms]" && name != "[kernel.kallsyms]") name += "_[k]";
  return name;
}

// The process name of a sample's header, "COMM PID [CPU] TIME: PERIOD EVENT:": what comes
// before the pid, its spaces as '_' (a thread may be named "Web Content").
std::string process_of(std::string_view header) {
  std::vector<std::string_view> words;
  for (size_t at = 0; at < header.size();) {
    const auto start = header.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const auto end = std::min(header.find_first_of(" \t", start), header.size());
    words.push_back(header.substr(start, end - start));
    at = end;
  }
  // The time: digits, a point, digits and a colon (a name's own word may end in ':').
  auto is_time = [](std::string_view w) {
    if (w.size() < 4 || w.back() != ':') return false;
    w.remove_suffix(1);
    const auto point = w.find('.');
    return point != std::string_view::npos && point > 0 && point + 1 < w.size() &&
           w.find_first_not_of("0123456789.") == std::string_view::npos && w.find('.', point + 1) == w.npos;
  };
  size_t time = 0;
  while (time < words.size() && !is_time(words[time])) ++time;
  size_t pid = time;
  if (pid > 1 && words[pid - 1].front() == '[') --pid;  // the CPU, with -a
  if (pid <= 1) return words.empty() ? std::string() : std::string(words[0]);
  --pid;
  std::string name;
  for (size_t i = 0; i < pid; ++i) {
    if (i > 0) name += '_';
    name += words[i];
  }
  std::replace(name.begin(), name.end(), ';', ':');  // a frame name holds no separator
  return name;
}

}  // namespace

void PerfScriptFolder::end_sample() {
  if (in_sample_ && !(frames_.empty() && process_.empty())) {
    std::string stack = process_;
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      if (!stack.empty()) stack += ';';
      stack += *it;
    }
    ++out_[stack];
  }
  in_sample_ = false;
  frames_.clear();
}

void PerfScriptFolder::add(std::string_view line) {
  const std::string_view t = trim(line);
  if (t.empty()) {
    end_sample();
  } else if (line[0] != '\t') {  // a sample's header; its frames begin with a tab
    end_sample();
    in_sample_ = true;
    process_ = process_root_ ? process_of(t) : std::string();
  } else if (in_sample_) {
    frames_.push_back(frame_name(t));
  }
}

FoldedStacks PerfScriptFolder::finish() {
  end_sample();
  return std::move(out_);
}

FoldedStacks fold_perf_script(std::istream& in, bool process_root) {
  PerfScriptFolder folder(process_root);
  std::string line;
  while (std::getline(in, line)) folder.add(line);
  return folder.finish();
}

FoldedStacks parse_folded(std::string_view text) {
  FoldedStacks out;
  size_t number = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (line.empty()) continue;
    const auto space = line.rfind(' ');
    uint64_t count = 0;
    const std::string_view digits = space == std::string_view::npos ? line : line.substr(space + 1);
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (space == std::string_view::npos || ec != std::errc() || ptr != digits.data() + digits.size())
      throw InputError("line " + std::to_string(number), "must be a stack, a space and a sample count");
    const std::string_view stack = trim(line.substr(0, space));
    if (stack.empty()) throw InputError("line " + std::to_string(number), "has an empty stack");
    out[std::string(stack)] += count;
  }
  return out;
}

std::string folded_text(const FoldedStacks& stacks) {
  std::string text;
  for (const auto& [stack, count] : stacks) text += stack + " " + std::to_string(count) + "\n";
  return text;
}

bool is_thread_start(std::string_view frame) {
  // The outermost frames of a whole stack: glibc's main thread and its other threads, a
  // static program's, Go's goroutines and threads.
  static const std::string_view starts[] = {"_start",
                                            "__libc_start_main",
                                            "__libc_start_call_main",
                                            "start_thread",
                                            "clone",
                                            "clone3",
                                            "__clone",
                                            "__clone3",
                                            "__GI___clone",
                                            "__GI___clone3",
                                            "runtime.goexit",
                                            "runtime.rt0_go",
                                            "runtime.mstart",
                                            "runtime.goexit.abi0"};
  return std::find(std::begin(starts), std::end(starts), frame) != std::end(starts);
}

uint64_t rooted_samples(const FoldedStacks& stacks) {
  uint64_t rooted = 0;
  for (const auto& [stack, count] : stacks) {
    const auto first = stack.find(';');
    if (first == std::string::npos) continue;
    const auto second = stack.find(';', first + 1);
    const std::string_view outer = std::string_view(stack).substr(
        first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
    if (is_thread_start(outer)) rooted += count;
  }
  return rooted;
}

std::map<std::string, FunctionSamples> function_samples(const FoldedStacks& stacks) {
  std::map<std::string, FunctionSamples> out;
  std::set<std::string_view> seen;
  for (const auto& [stack, count] : stacks) {
    seen.clear();
    std::string_view rest = stack, frame;
    for (;;) {
      const size_t end = rest.find(';');
      frame = rest.substr(0, end);
      if (seen.insert(frame).second) out[std::string(frame)].total += count;
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    out[std::string(frame)].self += count;  // the leaf
  }
  return out;
}

uint64_t total_samples(const FoldedStacks& stacks) {
  uint64_t total = 0;
  for (const auto& [stack, count] : stacks) total += count;
  return total;
}

}  // namespace loadlab
