#pragma once
// A pprof profile the controller wrote (profiles/KEY.N.SIDE.pb.gz, docs/profiles.md) read back
// as pprof's readers do: gunzipped, parsed as pprof's profile.proto, and each sample's stack of
// function names, leaf first, with its values.
#include <zlib.h>

#include <string>
#include <vector>

#include "github.com/google/pprof/proto/profile.pb.h"

namespace loadlab::testing {

struct PprofSample {
  std::vector<std::string> frames;  // leaf first
  int64_t samples = 0, cpu_ns = 0;
};

// The gunzipped bytes of `gz` (empty if they are not gzip).
inline std::string gunzip(const std::string& gz) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return {};
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

// The profile's samples; `profile` gets the whole message. Empty when it does not parse.
inline std::vector<PprofSample> pprof_samples(const std::string& gz, perftools::profiles::Profile& profile) {
  std::vector<PprofSample> out;
  if (!profile.ParseFromString(gunzip(gz))) return out;
  auto name_of_location = [&](uint64_t id) -> std::string {
    for (const auto& l : profile.location())
      if (l.id() == id && l.line_size() > 0)
        for (const auto& f : profile.function())
          if (f.id() == l.line(0).function_id()) return profile.string_table(f.name());
    return "?";
  };
  for (const auto& s : profile.sample()) {
    PprofSample p;
    for (uint64_t id : s.location_id()) p.frames.push_back(name_of_location(id));
    p.samples = s.value_size() > 0 ? s.value(0) : 0;
    p.cpu_ns = s.value_size() > 1 ? s.value(1) : 0;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace loadlab::testing
