// docs/result.schema.json against the proto it describes: every field of every message a
// CellResult holds is in the schema under the name and JSON type the proto3 mapping gives it,
// and no other. A field added to result.proto fails here until the schema has it too.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <set>

#include "judge/verdict_kind.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/v1/result.pb.h"
#include "run/run_folder.hpp"

namespace loadlab::controller {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

nlohmann::json schema() {
  return read_json_file(std::string(LOADLAB_SOURCE_DIR) + "/docs/result.schema.json");
}

// The schema a field's value must have in the proto3 JSON mapping.
nlohmann::json expected_value(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT64:
      return {{"$ref", "#/$defs/uint64"}};
    case FieldDescriptor::CPPTYPE_UINT32:
      return {{"$ref", "#/$defs/uint32"}};
    case FieldDescriptor::CPPTYPE_INT64:
      return {{"$ref", "#/$defs/int64"}};
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return {{"$ref", "#/$defs/double"}};
    case FieldDescriptor::CPPTYPE_BOOL:
      return {{"type", "boolean"}};
    case FieldDescriptor::CPPTYPE_STRING:
      return {{"type", "string"}};
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return {{"$ref", "#/$defs/" + f->message_type()->name()}};
    default:
      return {{"unexpected proto type", f->cpp_type_name()}};
  }
}

void check_message(const nlohmann::json& defs, const Descriptor* d, std::set<std::string>& seen) {
  if (!seen.insert(d->name()).second) return;
  SCOPED_TRACE(d->full_name());
  ASSERT_TRUE(defs.contains(d->name())) << "docs/result.schema.json has no $defs/" << d->name();
  const auto& def = defs[d->name()];
  EXPECT_EQ(def["additionalProperties"], false);
  std::set<std::string> fields, required;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    fields.insert(f->name());
    // json_util prints every field but unset messages and unset proto3 optionals; to_proto
    // always sets a cell's config.
    if (f->is_repeated() || (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE && !f->has_presence()) ||
        f->full_name() == "loadlab.v1.CellResult.cell")
      required.insert(f->name());
    ASSERT_TRUE(def["properties"].contains(f->name())) << "no property " << f->name();
    const auto& p = def["properties"][f->name()];
    if (f->is_map()) {
      EXPECT_EQ(p["type"], "object") << f->name();
      EXPECT_EQ(p["additionalProperties"], expected_value(f->message_type()->map_value())) << f->name();
    } else if (f->is_repeated()) {
      EXPECT_EQ(p["type"], "array") << f->name();
      EXPECT_EQ(p["items"], expected_value(f)) << f->name();
    } else {
      // A string field may list the values it takes (an enumeration), and nothing else.
      auto value = p;
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING && value.contains("enum")) {
        EXPECT_TRUE(value["enum"].is_array() && !value["enum"].empty()) << f->name();
        for (const auto& e : value["enum"]) EXPECT_TRUE(e.is_string()) << f->name();
        value.erase("enum");
      }
      EXPECT_EQ(value, expected_value(f)) << f->name();
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_map())
      check_message(defs, f->message_type(), seen);
    if (f->is_map() && f->message_type()->map_value()->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE)
      check_message(defs, f->message_type()->map_value()->message_type(), seen);
  }
  std::set<std::string> properties, listed;
  for (auto& [k, v] : def["properties"].items()) properties.insert(k);
  for (auto& r : def["required"]) listed.insert(r.get<std::string>());
  EXPECT_EQ(properties, fields) << "the schema's properties differ from the proto's fields";
  EXPECT_EQ(listed, required);
}

TEST(ResultSchema, CellsAreTheProtosMessagesFieldForField) {
  auto s = schema();
  EXPECT_EQ(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(s["properties"]["cells"]["items"]["$ref"], "#/$defs/CellResult");
  std::set<std::string> seen;
  check_message(s["$defs"], v1::CellResult::descriptor(), seen);
  EXPECT_TRUE(seen.count("Usage") && seen.count("HistogramBucket") && seen.count("UsageSample"));
}

TEST(ResultSchema, VerdictsAreTheProtosMessageFieldForField) {
  auto s = schema();
  EXPECT_EQ(s["properties"]["verdicts"]["$ref"], "#/$defs/Verdicts");
  std::set<std::string> seen;
  check_message(s["$defs"], v1::Verdicts::descriptor(), seen);
  EXPECT_TRUE(seen.count("CellVerdict") && seen.count("BaselineNight"));
}

// The words a verdict may say, as docs/result.schema.json lists them, are the controller's own
// table's (judge/verdict_kind.cpp), every one of them and nothing else.
TEST(ResultSchema, AVerdictsWordsAreTheControllersTable) {
  auto s = schema();
  std::set<std::string> listed, table;
  for (auto& w : s["$defs"]["CellVerdict"]["properties"]["verdict"]["enum"])
    listed.insert(w.get<std::string>());
  for (auto v : every_verdict()) table.insert(verdict_text(v));
  EXPECT_EQ(listed, table);
}

TEST(ResultSchema, TheHeaderRequiresTheDocumentedFieldsAndThisVersion) {
  auto s = schema();
  std::set<std::string> required;
  for (auto& r : s["required"]) required.insert(r.get<std::string>());
  EXPECT_EQ(required,
            (std::set<std::string>{"schema_version", "loadlab_version", "scenario_path", "scenario_file",
                                   "scenario", "lab_path", "agents", "started_at", "cells"}));
  EXPECT_FALSE(s.contains("additionalProperties"));  // newer writers may add header fields
  EXPECT_EQ(s["properties"]["schema_version"]["const"], kResultSchemaVersion);
}

}  // namespace
}  // namespace loadlab::controller
