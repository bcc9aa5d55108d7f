#pragma once
// `loadlab bisect SCENARIO --cell KEY --good C1 --bad C2 --lab LAB`, and `--resume DIR`
// (run/bisect.hpp). main.cpp only registers the subcommand and dispatches to it.
#include <atomic>
#include <ostream>

#include "run/bisect.hpp"

namespace CLI {
class App;
}

namespace loadlab::controller {

class BisectCommand {
 public:
  void add_to(CLI::App& app);
  bool chosen() const;
  // `stop`: nonzero once a signal asks the bisect to stop; `embedded`: the run's embedded agent.
  int run(std::ostream& out, const std::atomic<int>* stop, EmbeddedAgentFactory embedded) const;

 private:
  BisectOptions options_;
  CLI::App* command_ = nullptr;
};

}  // namespace loadlab::controller
