#pragma once
// Strict reading of JSON input files (scenarios, labs, catalogs). Every error names the
// JSON path (RFC 6901 pointer, e.g. "/matrix/threads/2") and what is allowed; keys that
// are not expected are errors, because in a config file they are typos.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/shared/input_error.hpp"

namespace loadlab {

// Reads and parses a JSON file. InputError (its file() set to `file`) when it cannot be
// read (a directory, say), on a syntax error (with the line and column), on a number out
// of a double's range and on a key its object already holds (both with the value's path).
nlohmann::json read_json_file(const std::string& file);
// How deep arrays and objects may nest in JSON input. nlohmann::json copies, compares and
// dumps a value recursively, so deeper nesting (a few hundred KB of '[') would overflow the
// stack; real input (scenarios, labs, catalogs, result.json) nests less than ten deep.
inline constexpr int kMaxJsonDepth = 64;
// The same, keeping each object's keys in the file's order (a scenario's matrix axes).
nlohmann::ordered_json read_ordered_json_file(const std::string& file);
// The whole of a file as text; InputError if it cannot be read (or is a directory).
[[nodiscard]] std::string read_text_file(const std::string& file);
// Parses JSON text as read_json_file does; `origin` names the text's file in errors.
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);
nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& origin);

// Escapes a key for a JSON pointer ("~" → "~0", "/" → "~1").
std::string pointer_token(const std::string& key);

// Typed access to one JSON object at `path`.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& j, std::string path);  // InputError if not an object

  // Rejects any key not listed, naming the allowed ones.
  void allow(std::initializer_list<const char*> keys) const;
  bool has(const char* key) const { return j_.contains(key); }
  std::string path(const char* key) const { return path_ + "/" + pointer_token(key); }
  const std::string& where() const { return path_; }  // this object's own path
  const nlohmann::json& at(const char* key) const { return j_.at(key); }
  const nlohmann::json& json() const { return j_; }

  std::string string(const char* key) const;  // required
  std::string string(const char* key, const std::string& fallback) const;
  int64_t integer(const char* key, int64_t min, int64_t max) const;  // required
  int64_t integer(const char* key, int64_t min, int64_t max, int64_t fallback) const;
  double number(const char* key, double min, double max) const;  // required
  double number(const char* key, double min, double max, double fallback) const;
  bool boolean(const char* key, bool fallback) const;
  // A non-empty array of distinct integers in [min, max].
  std::vector<int64_t> integers(const char* key, int64_t min, int64_t max) const;
  // A non-empty array of objects.
  std::vector<ObjectReader> objects(const char* key) const;
  ObjectReader object(const char* key) const;  // required
  // An object whose values are all strings.
  std::vector<std::pair<std::string, std::string>> string_map(const char* key) const;

 private:
  const nlohmann::json& required(const char* key) const;
  const nlohmann::json& j_;
  std::string path_;
};

}  // namespace loadlab
