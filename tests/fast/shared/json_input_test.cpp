// read_json_file on hostile files: each refusal is an InputError naming the file and the
// JSON pointer of the value (or the line), never a library exception of another type.
#include "loadlab/shared/json_input.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace loadlab {
namespace {

namespace fs = std::filesystem;

class JsonFileTest : public ::testing::Test {
 protected:
  JsonFileTest() {
    char tmpl[] = "/tmp/loadlab-json-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~JsonFileTest() override { fs::remove_all(dir); }
  std::string file(const std::string& text) {
    auto p = (dir / "f.json").string();
    std::ofstream(p) << text;
    return p;
  }
  // The error read_json_file (and its ordered twin) throws: "PATH: MESSAGE", or "" for none.
  template <class Read>
  std::string error_of(Read read, const std::string& path) {
    try {
      read(path);
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      return e.what();
    }
    return "";
  }
  void expect_both(const std::string& path, const std::string& error) {
    EXPECT_EQ(error_of(read_json_file, path), error);
    EXPECT_EQ(error_of(read_ordered_json_file, path), error);
  }
  fs::path dir;
};

TEST_F(JsonFileTest, ADuplicateKeyIsAnErrorNamingItsPath) {
  expect_both(file(R"({"targets": [{"name": "a"}, {"name": "b", "delay_ms": 1, "delay_ms": 5}]})"),
              "/targets/1/delay_ms: duplicate key");
  expect_both(file(R"({"a": 1, "b": {"a": 2}, "a": 3})"), "/a: duplicate key");
  expect_both(file(R"({"m": [[1, {"x~/": 1}], {"x~/": 2, "x~/": 3}]})"), "/m/1/x~0~1: duplicate key");
  // Equal keys in different objects are no duplicates.
  expect_both(file(R"({"a": {"k": 1}, "b": [{"k": 1}, {"k": 2}], "k": 0})"), "");
}

TEST_F(JsonFileTest, ANumberOutOfADoublesRangeIsAnErrorNamingItsPath) {
  std::string e = error_of(read_json_file, file(R"({"load": {"rate": 5, "duration_s": 1e309}})"));
  EXPECT_EQ(e.rfind("/load/duration_s: number out of range", 0), 0u) << e;
  EXPECT_NE(e.find("1e309"), std::string::npos) << e;
  e = error_of(read_json_file, file(R"({"matrix": {"threads": [1, 2, -1e400]}})"));
  EXPECT_EQ(e.rfind("/matrix/threads/2: number out of range", 0), 0u) << e;
  e = error_of(read_json_file, file("1" + std::string(400, '0')));  // an integer no double holds
  EXPECT_EQ(e.rfind("/: number out of range", 0), 0u) << e;
}

TEST_F(JsonFileTest, ADirectoryOrAMissingFileCannotBeRead) {
  std::string e = error_of(read_json_file, dir.string());
  EXPECT_NE(e.find("cannot read file " + dir.string() + ": it is a directory"), std::string::npos) << e;
  e = error_of(read_json_file, (dir / "nope.json").string());
  EXPECT_NE(e.find("cannot read file"), std::string::npos) << e;
}

TEST_F(JsonFileTest, ASyntaxErrorNamesTheLineWithoutTheLibrarysExceptionName) {
  std::string e = error_of(read_json_file, file("{\"a\": 1,\n \"b\": }"));
  EXPECT_NE(e.find("is not valid JSON: parse error at line 2"), std::string::npos) << e;
  EXPECT_EQ(e.find("json.exception"), std::string::npos) << e;
}

TEST_F(JsonFileTest, TheOrderedReadingKeepsTheFilesKeyOrder) {
  auto j = read_ordered_json_file(file(R"({"z": 1, "a": 2, "m": 3})"));
  std::vector<std::string> keys;
  for (auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));
}

// Found by fuzzing: nlohmann::json copies, compares and dumps a value recursively, and a
// few hundred KB of '[' overflowed the stack of `loadlab validate`.
std::string nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string text_error_of(const std::string& text) {
  try {
    parse_json_text(text, "in.json");
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "in.json");
    return e.what();
  }
  return "";
}

TEST(JsonText, NestingUpToTheBoundIsRead) {
  EXPECT_EQ(text_error_of(nested(kMaxJsonDepth)), "");
  EXPECT_EQ(text_error_of("{\"a\": " + nested(kMaxJsonDepth - 1) + "}"), "");
}

TEST(JsonText, DeeperNestingIsAnInputErrorNamingWhereItGoesTooDeep) {
  std::string at;  // the pointer of the 65th level: 64 array indexes
  for (int i = 0; i < kMaxJsonDepth; ++i) at += "/0";
  const std::string message = ": arrays and objects nest deeper than 64 levels";
  EXPECT_EQ(text_error_of(nested(kMaxJsonDepth + 1)), at + message);
  EXPECT_EQ(text_error_of("{\"a\": " + nested(kMaxJsonDepth) + "}"), "/a" + at.substr(2) + message);
  EXPECT_EQ(text_error_of(std::string(1'000'000, '[')), at + message);  // before the syntax error
}

}  // namespace
}  // namespace loadlab
