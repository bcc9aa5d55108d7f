// Fuzz target: a lab file's text read as `loadlab run --lab` reads it (parse_json_text, then
// parse_lab). InputError is the expected answer to bad input; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lab/lab.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/json_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)loadlab::controller::parse_lab(loadlab::parse_json_text(text, "lab.json"));
  } catch (const loadlab::InputError&) {
  }
  return 0;
}
