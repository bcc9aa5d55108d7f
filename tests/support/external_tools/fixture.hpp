#pragma once
// A recorded tool run from tests/data/clients/<tool>/<name>.{stdout,stderr,meta}.txt.
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace loadlab::clients::testing {

struct Recorded {
  std::string out, err, meta;
  int exit_code = 0;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline Recorded recorded(const std::string& tool, const std::string& name) {
  std::string base = std::string(LOADLAB_SOURCE_DIR) + "/tests/data/clients/" + tool + "/" + name;
  Recorded r{slurp(base + ".stdout.txt"), slurp(base + ".stderr.txt"), slurp(base + ".meta.txt")};
  auto pos = r.meta.find("exit_code: ");
  if (pos == std::string::npos) throw std::runtime_error("no exit_code in " + base + ".meta.txt");
  r.exit_code = std::stoi(r.meta.substr(pos + 11));
  return r;
}

}  // namespace loadlab::clients::testing
