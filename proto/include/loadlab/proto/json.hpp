#pragma once
// The one JSON form of the protocol's messages, for everything that crosses a process
// boundary as text: the load worker's event lines, result.json's figures, the journal.
// protobuf's json_util with fixed options: field names as in the .proto (snake_case),
// fields at their default value printed too (a 0 is a figure, not a missing one), and on
// reading, an unknown field is an error (a typo, or a newer writer), not a silent 0.
// Note the proto3 JSON mapping: 64-bit integers are strings ("requests": "10000").
#include <google/protobuf/message.h>

#include <string>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::proto {

// One line of JSON (no newline). Never fails for a valid message.
std::string to_json(const google::protobuf::Message& message);
// Parses `json` into `message` (cleared first); throws InputError (path: the message's type,
// e.g. "loadlab.v1.LoadEvent"; message: the parser's reason) when it is not one.
void from_json(std::string_view json, google::protobuf::Message* message);

}  // namespace loadlab::proto
