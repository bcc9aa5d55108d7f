#pragma once
// `loadlab agents`: each lab agent's Describe, or why it is unreachable, as a table.
#include <ostream>
#include <string>

namespace loadlab::controller {

// Returns 0 if every agent answered, 4 (exit_status::kLabUnusable) otherwise. Throws InputError
// for a bad lab file.
int describe_agents(const std::string& lab_path, const std::string& credentials_path, std::ostream& out);

}  // namespace loadlab::controller
