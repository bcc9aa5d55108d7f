#pragma once
// The project's one way to report input that is wrong: a scenario, lab or catalog file, a
// command-line flag, a gRPC request, a line another program printed. The check that finds
// the first bad field throws InputError{path, message}: `path` names the field (a JSON
// pointer "/matrix/threads/2", a flag "-t/--threads", a proto field "delay_ms"), `message`
// what is allowed and what was given. The edges turn it into exit status 2 (programs) or
// INVALID_ARGUMENT (the agent). Functions named parse_* that return std::optional answer
// only "is this an X" where the caller words the error itself.
#include <stdexcept>
#include <string>

namespace loadlab {

class InputError : public std::runtime_error {
 public:
  InputError(std::string path, const std::string& message)
      : std::runtime_error((path.empty() ? "/" : path) + ": " + message),
        path_(std::move(path)),
        message_(message) {}
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }
  // The file the error is in, when the catcher cannot know it ("" = the obvious one).
  const std::string& file() const { return file_; }
  InputError in_file(std::string file) const {
    InputError e = *this;
    e.file_ = std::move(file);
    return e;
  }
  // The same error under an outer context, e.g. "LoadSpec (as loadlab-load flags)".
  InputError within(const std::string& context) const {
    InputError e(context + ": " + path_, message_);
    e.file_ = file_;
    return e;
  }

 private:
  std::string path_;
  std::string message_;
  std::string file_;
};

}  // namespace loadlab
