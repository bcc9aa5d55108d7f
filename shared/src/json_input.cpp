#include "loadlab/shared/json_input.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

namespace loadlab {

namespace {
std::string range(int64_t min, int64_t max) { return std::to_string(min) + ".." + std::to_string(max); }
std::string describe_type(const nlohmann::json& v) {
  return v.is_string()    ? "a string"
         : v.is_boolean() ? "a boolean"
         : v.is_number()  ? "a number"
         : v.is_array()   ? "an array"
         : v.is_object()  ? "an object"
                          : "null";
}
}  // namespace

nlohmann::json read_json_file(const std::string& file) { return parse_json_text(read_text_file(file), file); }

std::string read_text_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError("", "cannot read file " + file);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  // The parser itself keeps its own stack; the depth is checked as each level opens, before
  // anything recurses over the value.
  const auto bounded = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw InputError(
          "", origin + " nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return true;
  };
  try {
    return nlohmann::json::parse(text, bounded, true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1E400).
    throw InputError("", origin + " is not valid JSON: " + e.what());
  }
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

ObjectReader::ObjectReader(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
  if (!j.is_object()) throw InputError(path_, "must be an object, got " + describe_type(j));
}

void ObjectReader::allow(std::initializer_list<const char*> keys) const {
  for (auto& [key, value] : j_.items()) {
    bool known = false;
    for (auto* k : keys) known = known || key == k;
    if (known) continue;
    std::string allowed;
    for (auto* k : keys) allowed += (allowed.empty() ? "" : ", ") + std::string(k);
    throw InputError(path_ + "/" + pointer_token(key), "unknown key; allowed here: " + allowed);
  }
}

const nlohmann::json& ObjectReader::required(const char* key) const {
  if (!j_.contains(key)) throw InputError(path(key), "is required");
  return j_.at(key);
}

std::string ObjectReader::string(const char* key) const {
  const auto& v = required(key);
  if (!v.is_string()) throw InputError(path(key), "must be a string, got " + describe_type(v));
  return v.get<std::string>();
}

std::string ObjectReader::string(const char* key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

int64_t ObjectReader::integer(const char* key, int64_t min, int64_t max) const {
  const auto& v = required(key);
  if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max ||
      (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    throw InputError(path(key), "must be an integer in " + range(min, max));
  return v.get<int64_t>();
}

int64_t ObjectReader::integer(const char* key, int64_t min, int64_t max, int64_t fallback) const {
  return has(key) ? integer(key, min, max) : fallback;
}

double ObjectReader::number(const char* key, double min, double max) const {
  const auto& v = required(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min || v.get<double>() > max) {
    std::ostringstream o;
    o << "must be a number in [" << min << ", " << max << "]";
    throw InputError(path(key), o.str());
  }
  return v.get<double>();
}

double ObjectReader::number(const char* key, double min, double max, double fallback) const {
  return has(key) ? number(key, min, max) : fallback;
}

bool ObjectReader::boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& v = j_.at(key);
  if (!v.is_boolean()) throw InputError(path(key), "must be true or false, got " + describe_type(v));
  return v.get<bool>();
}

std::vector<int64_t> ObjectReader::integers(const char* key, int64_t min, int64_t max) const {
  const auto& v = required(key);
  if (!v.is_array() || v.empty())
    throw InputError(path(key), "must be a non-empty array of integers in " + range(min, max));
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const auto& e = v[i];
    if (!e.is_number_integer() || e.get<int64_t>() < min || e.get<int64_t>() > max)
      throw InputError(path(key) + "/" + std::to_string(i), "must be an integer in " + range(min, max));
    if (std::find(out.begin(), out.end(), e.get<int64_t>()) != out.end())
      throw InputError(path(key) + "/" + std::to_string(i),
                       "duplicate value " + std::to_string(e.get<int64_t>()));
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<ObjectReader> ObjectReader::objects(const char* key) const {
  const auto& v = required(key);
  if (!v.is_array() || v.empty()) throw InputError(path(key), "must be a non-empty array of objects");
  std::vector<ObjectReader> out;
  for (size_t i = 0; i < v.size(); ++i) out.emplace_back(v[i], path(key) + "/" + std::to_string(i));
  return out;
}

ObjectReader ObjectReader::object(const char* key) const { return ObjectReader(required(key), path(key)); }

std::vector<std::pair<std::string, std::string>> ObjectReader::string_map(const char* key) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (!has(key)) return out;
  ObjectReader o = object(key);
  for (auto& [k, v] : j_.at(key).items()) {
    if (!v.is_string()) throw InputError(o.path(k.c_str()), "must be a string");
    out.emplace_back(k, v.get<std::string>());
  }
  return out;
}

}  // namespace loadlab
