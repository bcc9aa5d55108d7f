#include "loadlab/shared/json_input.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
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

// Follows the parser through the document, so that an error can name the JSON pointer of
// the value it is in, and refuses a key its object already has: nlohmann keeps the last
// of two equal keys silently, and in a config file the first one is then a setting that
// looks in force and is not.
class StrictParse {
 public:
  template <class Json>
  bool on(nlohmann::json::parse_event_t event, const Json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        // Checked as each level opens, before anything recurses over the value.
        if (frames_.size() >= static_cast<size_t>(kMaxJsonDepth))
          throw InputError(
              pointer(), "arrays and objects nest deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        frames_.push_back({event == Event::array_start, 0, {}, {}});
        break;
      case Event::key: {
        auto& f = frames_.back();
        f.key = parsed.template get<std::string>();
        if (!f.keys.insert(f.key).second) throw InputError(pointer(), "duplicate key");
        break;
      }
      case Event::object_end:
      case Event::array_end:
        frames_.pop_back();
        value_done();
        break;
      case Event::value:
        value_done();
        break;
    }
    return true;
  }

  // The pointer of the value being parsed ("" = the root).
  std::string pointer() const {
    std::string out;
    for (auto& f : frames_) out += "/" + (f.array ? std::to_string(f.index) : pointer_token(f.key));
    return out;
  }

 private:
  void value_done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  struct Frame {
    bool array;
    size_t index;                // array: the element being parsed
    std::string key;             // object: the member being parsed
    std::set<std::string> keys;  // object: the keys seen so far
  };
  std::vector<Frame> frames_;
};

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is the reason.
std::string reason(const nlohmann::json::exception& e) {
  std::string what = e.what();
  auto end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

template <class Json>
Json parse_strict(const std::string& text, const std::string& origin) {
  StrictParse tracker;
  try {
    return Json::parse(
        text,
        [&](int, nlohmann::json::parse_event_t event, Json& parsed) { return tracker.on(event, parsed); },
        /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: a number beyond a double's range (1e309), which the parser cannot hold.
    throw InputError(tracker.pointer(),
                     "number out of range (" + reason(e) + "); a number must be finite, at most ~1.8e308")
        .in_file(origin);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("", origin + " is not valid JSON: " + reason(e)).in_file(origin);
  } catch (const InputError& e) {
    throw e.in_file(origin);
  }
}

}  // namespace

std::string read_text_file(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw InputError("", "cannot read file " + file + ": it is a directory, not a JSON file").in_file(file);
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) throw InputError("", "cannot read file " + file).in_file(file);
  return text.str();
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  return parse_strict<nlohmann::json>(text, origin);
}

nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& origin) {
  return parse_strict<nlohmann::ordered_json>(text, origin);
}

nlohmann::json read_json_file(const std::string& file) { return parse_json_text(read_text_file(file), file); }

nlohmann::ordered_json read_ordered_json_file(const std::string& file) {
  return parse_ordered_json_text(read_text_file(file), file);
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
