#include "loadlab/controller/cell_runner.hpp"

#include <memory>

#include "loadlab/shared/histogram.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::controller {

namespace {

UsageResult from_proto(const v1::Usage& u) {
  UsageResult r;
  r.window_s = u.window_s();
  r.cpu_pct = u.cpu_pct();
  r.cpu_user_pct = u.cpu_user_pct();
  r.cpu_system_pct = u.cpu_system_pct();
  r.rss_kb_mean = u.rss_kb_mean();
  r.rss_kb_peak = u.rss_kb_peak();
  r.samples = u.samples();
  return r;
}

void fill_from_proto(const v1::LoadResult& p, RepResult& r) {
  r.requests = p.requests();
  r.errors = p.errors();
  r.duration_s = p.duration_s();
  r.qps = p.qps();
  const auto& l = p.latency();
  r.latency_us = {l.p50_us(), l.p90_us(), l.p99_us(), l.p999_us(), l.max_us(), l.mean_us(), l.min_us()};
  for (auto& [code, n] : p.status()) r.status[code] = n;
  for (auto& [kind, n] : p.error_kinds()) r.error_kinds[kind] = n;
  r.bytes_read = p.bytes_read();
  Histogram h(static_cast<int64_t>(p.histogram().highest_trackable()),
              static_cast<int>(p.histogram().significant_digits()));
  for (auto& b : p.histogram().buckets()) h.add_bucket(b.index(), b.count());
  r.histogram = h.to_json();
  // The worker's exact extremes and mean (bucket midpoints otherwise).
  r.histogram["min"] = static_cast<int64_t>(l.min_us());
  r.histogram["max"] = static_cast<int64_t>(l.max_us());
  r.histogram["mean"] = l.mean_us();
}

std::string status_text(const grpc::Status& st) {
  return st.error_message().empty() ? "gRPC status " + std::to_string(st.error_code()) : st.error_message();
}

// Ends a stream whatever happens: cancels it if it was not finished normally.
template <class Stream>
struct StreamCloser {
  grpc::ClientContext& ctx;
  std::unique_ptr<Stream>& stream;
  bool finished = false;
  ~StreamCloser() {
    if (!finished && stream) {
      ctx.TryCancel();
      stream->Finish();
    }
  }
};

}  // namespace

v1::TargetSpec target_spec(const Scenario& s, const Cell& c) {
  const auto& t = s.targets[c.target_index];
  v1::TargetSpec spec;
  if (!t.builtin.empty()) spec.set_builtin(t.builtin);
  else spec.set_catalog(t.catalog);
  spec.set_delay_ms(c.delay_ms);
  spec.set_threads(t.server_threads);
  spec.set_body(t.body);
  return spec;
}

v1::LoadSpec load_spec(const Scenario& s, const Cell& c, const std::string& endpoint) {
  const auto& l = s.load;
  v1::LoadSpec spec;
  spec.set_endpoint(endpoint);
  spec.set_path(l.path);
  spec.set_method(l.method);
  for (auto& [k, v] : l.headers) (*spec.mutable_headers())[k] = v;
  spec.set_body(l.body);
  spec.set_threads(c.threads);
  spec.set_connections(c.connections);
  if (l.requests_per_thread) spec.set_requests_per_thread(*l.requests_per_thread);
  if (l.total_requests) spec.set_total_requests(*l.total_requests);
  if (l.duration_s) spec.set_duration_s(*l.duration_s);
  spec.set_warmup_s(l.warmup_s);
  spec.set_keep_alive(l.keep_alive);
  spec.set_timeout_ms(l.timeout_ms);
  return spec;
}

RepResult run_repetition(v1::Agent::StubInterface& target_agent, v1::Agent::StubInterface& load_agent,
                         const Scenario& s, const Cell& c, const ProgressFn& progress) {
  auto log = component_logger("controller");
  RepResult rep;

  // 1. Host the target and wait until it is ready.
  grpc::ClientContext tctx;
  std::unique_ptr<grpc::ClientReaderWriterInterface<v1::TargetCommand, v1::TargetEvent>> target(
      target_agent.HostTarget(&tctx));
  StreamCloser<grpc::ClientReaderWriterInterface<v1::TargetCommand, v1::TargetEvent>> target_closer{tctx, target};
  auto target_failure = [&](const std::string& phase) {
    target_closer.finished = true;
    target->WritesDone();
    v1::TargetEvent ignored;
    while (target->Read(&ignored)) {
      if (ignored.has_exited())
        return CellError(phase, "target exited: " + ignored.exited().output_tail());
    }
    return CellError(phase, status_text(target->Finish()));
  };
  {
    v1::TargetCommand cmd;
    *cmd.mutable_spec() = target_spec(s, c);
    if (!target->Write(cmd)) throw target_failure("start");
  }
  std::string endpoint;
  for (v1::TargetEvent ev; endpoint.empty();) {
    if (!target->Read(&ev)) throw target_failure("ready");
    if (ev.has_ready()) {
      endpoint = ev.ready().endpoint();
      rep.target_startup_ms = ev.ready().startup_ms();
    }
  }
  auto mark = [&](v1::Mark::Kind kind, const std::string& phase) {
    v1::TargetCommand cmd;
    cmd.mutable_mark()->set_kind(kind);
    cmd.mutable_mark()->set_label(c.key());
    if (!target->Write(cmd)) throw target_failure(phase);
  };

  // 2. Run the load; bracket its measured window with marks on the target.
  grpc::ClientContext lctx;
  std::unique_ptr<grpc::ClientReaderWriterInterface<v1::LoadCommand, v1::LoadEvent>> load(load_agent.RunLoad(&lctx));
  StreamCloser<grpc::ClientReaderWriterInterface<v1::LoadCommand, v1::LoadEvent>> load_closer{lctx, load};
  {
    v1::LoadCommand cmd;
    *cmd.mutable_spec() = load_spec(s, c, endpoint);
    load->Write(cmd);
    load->WritesDone();
  }
  bool measuring = false, have_result = false, have_server_usage = false, have_client_usage = false;
  for (v1::LoadEvent ev; load->Read(&ev);) {
    if (ev.has_progress()) {
      if (progress) progress(ev.progress());
    } else if (ev.has_measure_start()) {
      mark(v1::Mark::RESET, "load");
      measuring = true;
    } else if (ev.has_result()) {
      if (measuring) mark(v1::Mark::FINAL, "usage");
      fill_from_proto(ev.result(), rep);
      have_result = true;
      if (measuring) {
        for (v1::TargetEvent tev;;) {
          if (!target->Read(&tev)) throw target_failure("usage");
          if (tev.has_usage()) {
            rep.server = from_proto(tev.usage());
            have_server_usage = true;
            break;
          }
          if (tev.has_exited()) throw CellError("load", "target exited: " + tev.exited().output_tail());
        }
      }
    } else if (ev.has_usage()) {
      rep.client = from_proto(ev.usage());
      have_client_usage = true;
    }
  }
  load_closer.finished = true;
  auto load_status = load->Finish();
  if (!load_status.ok()) throw CellError("load", status_text(load_status));
  if (!have_result || !have_server_usage || !have_client_usage)
    throw CellError("load", "the load agent ended without a result and usage for both sides");

  // 3. Stop the target.
  target_closer.finished = true;
  target->WritesDone();
  for (v1::TargetEvent ev; target->Read(&ev);) {
  }
  auto tstatus = target->Finish();
  if (!tstatus.ok()) log->warn("cell {}: target stream ended with: {}", c.key(), status_text(tstatus));
  return rep;
}

}  // namespace loadlab::controller
