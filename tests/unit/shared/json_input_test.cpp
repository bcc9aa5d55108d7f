// JSON input text: syntax errors and the nesting bound, both as InputErrors naming the file.
#include "loadlab/shared/json_input.hpp"

#include <gtest/gtest.h>

#include <string>

namespace loadlab {
namespace {

std::string nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string error_of(const std::string& text) {
  try {
    parse_json_text(text, "in.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonInput, NestingUpToTheBoundIsRead) {
  EXPECT_EQ(error_of(nested(kMaxJsonDepth)), "");
  EXPECT_EQ(error_of("{\"a\": " + nested(kMaxJsonDepth - 1) + "}"), "");
}

TEST(JsonInput, DeeperNestingIsAnInputError) {
  const std::string expected = "/: in.json nests arrays and objects deeper than 64 levels";
  EXPECT_EQ(error_of(nested(kMaxJsonDepth + 1)), expected);
  EXPECT_EQ(error_of("{\"a\": " + nested(kMaxJsonDepth) + "}"), expected);
  EXPECT_EQ(error_of(std::string(1'000'000, '[')), expected);  // refused before the syntax error
}

TEST(JsonInput, SyntaxErrorNamesTheOrigin) {
  EXPECT_EQ(error_of("{\"a\": }").rfind("/: in.json is not valid JSON: ", 0), 0u);
}

TEST(JsonInput, NumberBeyondADoubleIsAnInputError) {
  // Found by fuzzing: nlohmann::json throws out_of_range, not parse_error, for it, which
  // escaped as an internal error (exit 1) instead of naming the file (exit 2).
  EXPECT_EQ(
      error_of("{\"agents\": 1E400}"),
      "/: in.json is not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1E400'");
}

}  // namespace
}  // namespace loadlab
