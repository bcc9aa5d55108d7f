#pragma once
// Tests of checks: the message of the InputError a call throws, "" when it throws none.
#include <string>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::testing {

template <class F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace loadlab::testing
