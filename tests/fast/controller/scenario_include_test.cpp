// A scenario's `include`: a base matrix and small variants (docs/scenario.md, "Includes").
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {
namespace {

namespace fs = std::filesystem;

// A folder of scenario files for the duration of a test.
class Files {
 public:
  Files() {
    char tmpl[] = "/tmp/loadlab-include-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~Files() { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    auto p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

const char* kBase = R"({
  "name": "base", "description": "the lab's matrix",
  "targets": [{"name": "beast", "builtin": "hello"}],
  "matrix": {"delay_ms": [0, 5, 10], "threads": [1, 5, 10, 20]},
  "load": {"duration_s": 10, "warmup_s": 2, "headers": {"X-A": "a", "X-B": "b"}},
  "repetitions": 3
})";

// The error a load throws: its file and message ("" when it loads).
std::pair<std::string, std::string> load_error_of(const std::string& file) {
  try {
    (void)load_scenario_file(file);
  } catch (const InputError& e) {
    return {e.file(), e.what()};
  }
  return {"", ""};
}

TEST(Include, AVariantMergesOverItsBaseKeyByKeyAndArraysAreReplaced) {
  Files f;
  f.write("base/matrix.json", kBase);
  auto variant = f.write("go-5ms.json", R"({
    "include": "base/matrix.json",
    "name": "go-5ms",
    "matrix": {"delay_ms": [5]},
    "load": {"headers": {"X-B": null, "X-C": "c"}, "duration_s": 2}
  })");
  auto s = load_scenario_file(variant);
  EXPECT_EQ(s.name, "go-5ms");
  EXPECT_EQ(s.description, "the lab's matrix");  // from the base
  ASSERT_EQ(s.matrix.size(), 2u);
  EXPECT_EQ(s.matrix[0].name, "delay_ms");  // the base's axis order, the variant's values
  EXPECT_EQ(s.matrix[0].texts, std::vector<std::string>{"5"});
  EXPECT_EQ(s.matrix[1].texts, (std::vector<std::string>{"1", "5", "10", "20"}));
  EXPECT_EQ(*s.load.duration_s, 2);
  EXPECT_EQ(s.load.warmup_s, 2);
  // Objects merge key by key; null removes a key (RFC 7386).
  EXPECT_EQ(s.load.headers, (std::vector<std::pair<std::string, std::string>>{{"X-A", "a"}, {"X-C", "c"}}));
  EXPECT_EQ(s.repetitions, 3u);
  EXPECT_EQ(expand(s).size(), 4u);
  EXPECT_EQ(s.files, (std::vector<std::string>{variant, f.path("base/matrix.json")}));
  // What runs is the merged scenario, without `include`: the run folder's copy stands alone.
  EXPECT_FALSE(s.source.contains("include"));
  EXPECT_EQ(s.source["matrix"]["delay_ms"], nlohmann::json::array({5}));
  auto again = parse_scenario_text(s.source_text, "copy.json");
  EXPECT_EQ(again.files.size(), 1u);
  EXPECT_EQ(expand(again).size(), 4u);
}

TEST(Include, SeveralAndNestedIncludesMergeInOrderTheLaterWinning) {
  Files f;
  f.write("parts/targets.json", R"({"targets": [{"name": "beast", "builtin": "hello"}]})");
  f.write("parts/load.json", R"({"include": "targets.json", "load": {"total_requests": 100, "threads": 2}})");
  f.write("parts/more-load.json", R"({"load": {"threads": 4}, "repetitions": 2})");
  auto top = f.write("s.json", R"({"include": ["parts/load.json", "parts/more-load.json"],
      "name": "s", "matrix": {"delay_ms": [0]}})");
  auto s = load_scenario_file(top);
  EXPECT_EQ(s.load.threads, 4u);  // more-load.json comes after load.json
  EXPECT_EQ(*s.load.total_requests, 100u);
  EXPECT_EQ(s.repetitions, 2u);
  ASSERT_EQ(s.targets.size(), 1u);
  // Read order: the file, then each include as it is reached (load.json's own include first).
  EXPECT_EQ(s.files, (std::vector<std::string>{top, f.path("parts/load.json"), f.path("parts/targets.json"),
                                               f.path("parts/more-load.json")}));
}

TEST(Include, AnErrorIsReportedInTheFileThatWroteTheValue) {
  Files f;
  f.write("base.json", R"({"name": "b", "targets": [{"name": "beast", "builtin": "hello"}],
      "matrix": {"threads": [1, 0]}, "load": {"total_requests": 10}})");
  auto fixes = f.write("fixes.json", R"({"include": "base.json", "name": "v", "matrix": {"threads": [1, 2]},
      "load": {"keepalive": false}})");
  auto [file, message] = load_error_of(fixes);
  EXPECT_EQ(file, fixes);  // the typo is the variant's
  EXPECT_EQ(message.substr(0, 31), "/load/keepalive: unknown key; a");
  auto keeps = f.write("keeps.json", R"({"include": "base.json", "name": "v"})");
  std::tie(file, message) = load_error_of(keeps);
  EXPECT_EQ(file, f.path("base.json"));  // the bad thread count is the base's
  EXPECT_EQ(message, "/matrix/threads/1: must be an integer in 1..1024");
}

TEST(Include, BadIncludesAreInputErrorsNamingTheIncludingFile) {
  Files f;
  auto expect = [&](const std::string& name, const std::string& text, const std::string& message) {
    auto file = f.write(name, text);
    auto [at, what] = load_error_of(file);
    EXPECT_EQ(at, file) << name;
    EXPECT_EQ(what, message) << name;
  };
  expect("missing.json", R"({"include": "nope.json"})",
         "/include: cannot include " + f.path("nope.json") + ": no such file");
  fs::create_directories(f.path("folder"));
  expect("dir.json", R"({"include": ["folder"]})",
         "/include: cannot include " + f.path("folder") + ": not a regular file");
  expect("device.json", R"({"include": "/dev/zero"})",
         "/include: \"/dev/zero\" resolves to /dev/zero, outside the scenario's root " +
             fs::canonical(f.path("")).string() +
             " (an include must stay inside the folder of the scenario; --include-root names another)");
  expect("number.json", R"({"include": ["a.json", 3]})",
         "/include/1: must be a scenario file name (relative to this file), got 3");
  expect("empty.json", R"({"include": []})",
         "/include: must be a file name or a non-empty array of file names");
  expect("self.json", R"({"include": "self.json"})",
         "/include: includes itself: " + f.path("self.json") + " → " + f.path("self.json"));
  f.write("ping.json", R"({"include": "pong.json"})");
  f.write("pong.json", R"({"include": "ping.json"})");
  auto [at, what] = load_error_of(f.path("ping.json"));
  EXPECT_EQ(at, f.path("pong.json"));
  EXPECT_EQ(what, "/include: includes itself: " + f.path("ping.json") + " → " + f.path("pong.json") + " → " +
                      f.path("ping.json"));
  f.write("array.json", "[1]");  // the included file is the one that is wrong
  std::tie(at, what) = load_error_of(f.write("of-array.json", R"({"include": "array.json"})"));
  EXPECT_EQ(at, f.path("array.json"));
  EXPECT_EQ(what, "/: an included scenario file must hold a JSON object, got array");
}

TEST(Include, NestingAndFileCountAreBounded) {
  Files f;
  // A chain one file longer than the limit: each file includes the next.
  const int n = limits::kMaxIncludeDepth + 1;
  for (int i = 0; i < n; ++i)
    f.write("c" + std::to_string(i) + ".json", R"({"include": "c)" + std::to_string(i + 1) + R"(.json"})");
  f.write("c" + std::to_string(n) + ".json", "{}");
  auto [at, what] = load_error_of(f.path("c0.json"));
  EXPECT_EQ(at, f.path("c" + std::to_string(limits::kMaxIncludeDepth) + ".json"));
  EXPECT_EQ(what, "/include: includes nest more than 16 files deep");
  // Many files, each included twice (no cycle), past the count.
  std::string list;
  for (int i = 0; i < limits::kMaxScenarioFiles; ++i)
    list += std::string(list.empty() ? "" : ",") + "\"leaf.json\"";
  f.write("leaf.json", "{}");
  std::tie(at, what) = load_error_of(f.write("many.json", "{\"include\": [" + list + "]}"));
  EXPECT_EQ(what, "/include/63: a scenario may read at most 64 files with its includes");
}

// A scenario repository must not read a file of the machine outside its tree into a run: an
// include that resolves outside the scenario's folder, by "..", an absolute path or a link, is
// refused naming it, where it leads and the root; --include-root widens the root.
TEST(Include, AnIncludeThatResolvesOutsideTheScenariosFolderIsRefused) {
  Files f;
  const std::string outside = fs::canonical(f.path("")).string() + "/secret.json";
  f.write("secret.json", R"({"name": "secret", "targets": [{"name": "t", "builtin": "hello"}],
        "matrix": {"threads": [1]}, "load": {"total_requests": 100}})");
  f.write("repo/base/matrix.json", kBase);
  const std::string root = fs::canonical(f.path("repo")).string();
  fs::create_symlink(outside, f.path("repo/link.json"));
  auto refused = [&](const std::string& written) {
    return "/include: \"" + written + "\" resolves to " + outside + ", outside the scenario's root " + root +
           " (an include must stay inside the folder of the scenario; --include-root names another)";
  };
  for (const std::string& written : {std::string("../secret.json"), outside, std::string("link.json"),
                                     std::string("base/../../secret.json")}) {
    auto file = f.write("repo/s.json", "{\"include\": \"" + written + "\"}");
    auto [at, what] = load_error_of(file);
    EXPECT_EQ(at, file) << written;
    EXPECT_EQ(what, refused(written));
  }
  // From an included file too, against the same root.
  f.write("repo/base/leak.json", R"({"include": "../../secret.json"})");
  auto [at, what] = load_error_of(f.write("repo/s.json", R"({"include": "base/leak.json"})"));
  EXPECT_EQ(at, f.path("repo/base/leak.json"));
  EXPECT_EQ(what, refused("../../secret.json"));

  // Inside the root, through ".." or a link that stays inside, an include is read.
  fs::create_symlink("base/matrix.json", f.path("repo/alias.json"));
  auto s = load_scenario_file(
      f.write("repo/s.json", R"({"include": ["alias.json", "base/../base/matrix.json"]})"));
  EXPECT_EQ(s.name, "base");
  EXPECT_EQ(s.files.size(), 3u);

  // The operator's --include-root names another root.
  auto wide = f.write("repo/wide.json", R"({"include": "../secret.json"})");
  EXPECT_EQ(load_scenario_file(wide, {}, f.path("")).name, "secret");
  std::tie(at, what) = load_error_of(wide);
  EXPECT_EQ(what, refused("../secret.json"));
  try {
    (void)load_scenario_file(wide, {}, f.path("repo/base"));
    ADD_FAILURE() << "an include outside --include-root was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.what(), "/include: \"../secret.json\" resolves to " + outside +
                            ", outside the include root " + root + "/base (--include-root)");
  }
}

}  // namespace
}  // namespace loadlab::controller
