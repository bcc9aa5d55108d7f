// Fuzz target: a scenario file's text through the controller's own reading of it (JSON
// syntax, key order, every check of parse_scenario). Rejecting the input with InputError
// is the expected answer to garbage; any other exception or a crash is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "loadlab/shared/input_error.hpp"
#include "scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)loadlab::controller::parse_scenario_text(text, "scenario.json");
  } catch (const loadlab::InputError&) {
  }
  return 0;
}
