#pragma once
// What the project's programs share at their edge (their mains): the exit statuses of the
// worker programs and the way bad input and failures end a program. loadlab-target,
// loadlab-load and loadlab-agent exit 0 when done, kFailed when they could not do their job
// (cannot listen, the target unreachable, a certificate that cannot be made) and
// exit_status::kBadInput (2) for a flag that is wrong, named in one line on stderr. The
// controller's own statuses (a regression, failed cells, an unusable lab) are exit_status.hpp's.
// Header-only: the mains link CLI11, the libraries do not.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/exit_status.hpp"
#include "loadlab/shared/input_error.hpp"

namespace loadlab::program {

inline constexpr int kOk = exit_status::kOk;
inline constexpr int kFailed = 1;  // a worker program could not do its job (not a regression)
inline constexpr int kBadInput = exit_status::kBadInput;

// Parses the command line. nullopt: go on. Otherwise the status to exit with: --help and
// --version print and exit 0; a parse error is "NAME: message" on stderr and kBadInput.
[[nodiscard]] inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                                           std::string_view name) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return kBadInput;
  }
}

// Runs a main's body: InputError (a flag or file that is wrong) ends it with "NAME: what" and
// kBadInput; any other exception with "NAME: what" and kFailed.
template <class Body>
int run(std::string_view name, Body&& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return kFailed;
  }
}

// A plain program whose command line asks for TLS or HTTP/3 becomes `sibling` (the binary beside
// it that links those libraries: loadlab-target-secure, loadlab-load-secure) with the same
// arguments. The pid stays, so what samples, confines and stops it goes on working. Throws
// EnvironmentError naming `what` and the missing file when the sibling cannot be run.
[[noreturn]] inline void hand_over_to_sibling(char** argv, const char* sibling, const std::string& what) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto path = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / sibling;
  std::cout.flush();
  std::cerr.flush();
  execv(path.c_str(), argv);
  throw EnvironmentError(what + " are served by " + path.string() +
                         ", which cannot be run: " + std::strerror(errno));
}

}  // namespace loadlab::program
