#include "loadlab/proto/json.hpp"

#include <google/protobuf/util/json_util.h>

#include <stdexcept>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::proto {

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  // Printing fails only for a message that cannot be valid (e.g. a broken Any): a bug.
  if (!status.ok())
    throw std::logic_error("cannot print " + message.GetTypeName() + ": " + status.ToString());
  return out;
}

void from_json(std::string_view json, google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  message->Clear();
  auto status = google::protobuf::util::JsonStringToMessage(std::string(json), message, options);
  if (!status.ok()) throw InputError(message->GetTypeName(), std::string(status.message()));
}

}  // namespace loadlab::proto
