#pragma once
// Where a run's inputs came from: the scenario file's hash and its git state.
#include <nlohmann/json.hpp>
#include <string>

#include "loadlab/shared/sha256.hpp"

namespace loadlab::controller {

using loadlab::sha256_file;

// {"path", "sha256", "git": {"commit", "dirty", "tree_dirty"} or null outside a git work tree}
nlohmann::json file_provenance(const std::string& path);

}  // namespace loadlab::controller
