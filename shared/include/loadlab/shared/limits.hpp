#pragma once
// The limits of one load run and one target, in one table: the scenario checker
// (`loadlab validate`), the agent (before it spawns anything) and the load worker's own
// flag check all read them from here, so a value one layer accepts is never refused by
// another (where it would look like a dead agent and be retried).
#include <cstddef>
#include <cstdint>

namespace loadlab::limits {

// Load worker.
inline constexpr int kMaxThreads = 1024;                  // load threads of one worker
inline constexpr int kMaxConnectionsPerThread = 100'000;  // connections of one thread
inline constexpr int kMaxConnections = 1'000'000;         // connections of one worker
// HTTP/2: concurrent streams of one connection (the load worker's --streams, and the
// SETTINGS_MAX_CONCURRENT_STREAMS the built-in target advertises, so a valid --streams is
// never throttled by it).
inline constexpr int kMaxStreams = 1'000;
inline constexpr int64_t kMaxRequests = 1'000'000'000'000;  // -n / total_requests (10^12)
inline constexpr double kMaxDurationS = 86'400;             // one day
inline constexpr double kMaxWarmupS = 3'600;
// A load's whole run, warm-up and measured duration together (warmup_s + duration_s): the
// agent's --max-duration-s caps this (by default at this), so a warm-up cannot stretch a run
// past it. A duration of kMaxDurationS therefore leaves no room for a warm-up.
inline constexpr double kMaxLoadRunS = kMaxDurationS;
inline constexpr int kMaxTimeoutMs = 3'600'000;
inline constexpr int kDefaultTimeoutMs = 5'000;  // a load request's, when none is given
// A request body travels in the LoadSpec gRPC message (gRPC's default cap is 4 MiB).
inline constexpr int kMaxBodyBytes = 1 << 20;
inline constexpr int kMaxMethodLength = 32;
// Open loop (requests per second a load thread paces). Below the minimum a slot is over
// 16 minutes away; above the maximum one every 100 ns, more than a thread can send.
inline constexpr double kMinRatePerThread = 0.001;
inline constexpr double kMaxRatePerThread = 1e7;
inline constexpr double kMaxRate = kMaxRatePerThread * kMaxThreads;  // of a whole worker
// An open loop's pacing granularity, µs (--pace-granularity, load.pace_granularity_us): a
// tenth of a second is coarser than any pace it is for.
inline constexpr double kMaxPaceGranularityUs = 100'000;

// Target.
inline constexpr int kMaxDelayMs = 60'000;
// How long a target may take to become ready (a catalog entry's start_timeout_ms, or the
// TargetSpec's): a JVM or a Go build may take minutes, not days.
inline constexpr int kMinStartTimeoutMs = 100;
inline constexpr int kMaxStartTimeoutMs = 600'000;
inline constexpr int kMaxServerThreads = 1024;
// A target built from a commit (a catalog entry's "source", docs/agent.md): a ref as a scenario
// or a bisect names it, and how long a build may run (the entry's source.timeout_s: a large
// C++ tree may take an hour, not a day). The agent's build cache holds at most its
// --build-cache-mb, least recently used builds evicted first.
inline constexpr size_t kMaxRefBytes = 256;
inline constexpr int kMinBuildTimeoutS = 1;
inline constexpr int kMaxBuildTimeoutS = 6 * 3600;
inline constexpr int kDefaultBuildTimeoutS = 600;
inline constexpr int64_t kDefaultBuildCacheMb = 10'240;
// Instructions per request (a scenario's `instructions`, docs/instructions.md): the sequential
// requests of a callgrind probe (each ~50 times slower than natively), the most of a
// callgrind output the agent sends back for the run folder, and how long a target under
// callgrind may take to exit and write its output once stopped.
inline constexpr int64_t kMaxInstructionProbeRequests = 1'000'000;
inline constexpr double kMaxInstructionProbeRate = 100'000;  // requests per second
inline constexpr int64_t kMaxProfileBytes = int64_t{32} << 20;
// CPU profiles (a scenario's `profile`, ProfileSpec, docs/profiles.md): perf's samples a second
// of a thread's CPU time. kMaxProfileBytes also bounds the folded stacks an agent sends back.
inline constexpr int kMaxProfileHz = 10'000;
inline constexpr int kDefaultProfileHz = 999;  // off the kernel's tick, so samples do not beat with it
// How long perf may take to stop recording (it writes what it buffered) and to fold a window's
// profile (`perf script`: seconds for a long window unwound from DWARF); the agent's calls and
// the controller's deadlines after a profiled window allow kProfileAllowanceS more.
inline constexpr int kProfileStopTimeoutS = 60;
inline constexpr int kProfileFoldTimeoutS = 120;
inline constexpr int kProfileAllowanceS = kProfileStopTimeoutS + kProfileFoldTimeoutS;
inline constexpr int kCallgrindStopGraceMs = 20'000;
inline constexpr int64_t kMaxResponseBodyBytes = int64_t{64} << 20;  // --body-size: filler bytes
inline constexpr int64_t kMaxWorkUs = 1'000'000;                     // --work-us: CPU burnt per request
// x-loadlab-work-us, the same per request but asked by the client: the most one request may
// hold an io thread (a connection can ask it of many streams; docs/target.md).
inline constexpr int64_t kMaxRequestWorkUs = 50'000;
// --read-timeout-ms, --idle-timeout-ms and the parts of --stall.
inline constexpr int64_t kMaxTargetTimeoutMs = 3'600'000;

// Agent: a job's process tree (a target that forks workers; a fork bomb stops here), and
// how long a call's peer may keep it waiting (a stream that holds a job slot without
// progressing: see Mark.HEARTBEAT in agent.proto).
inline constexpr int kDefaultJobProcesses = 256;
inline constexpr int kMaxJobProcesses = 65'536;
// A job's tasks (processes and threads), held by the kernel's pids controller where there is
// one: a fork loop fails inside the job before the agent's next sample.
inline constexpr int kDefaultJobTasks = 8192;
inline constexpr int kMaxJobTasks = 4'194'304;  // the kernel's highest pid_max
inline constexpr int kDefaultIdleTimeoutS = 60;
inline constexpr int kMinIdleTimeoutS = 15;  // three controller heartbeats
inline constexpr int kMaxIdleTimeoutS = 86'400;

// The agent's gRPC server (docs/security-design.md, "Limits and fairness"). The largest message it
// takes: a LoadSpec or TargetSpec holds a body of at most kMaxBodyBytes, headers and numbers,
// so twice that leaves room (gRPC's default is 4 MiB). The largest it sends: a result with its
// histograms (the controller's channel takes up to this, agent_pool.cpp). Concurrent calls on
// one connection: a controller holds one target, one load and a Describe or two. What all calls
// together may hold: the transport's buffers (a few messages of kAgentMaxReceiveBytes on each
// of kAgentMaxStreamsPerConnection streams of a few connections), and the threads that serve
// calls (a sync server holds one for each running call).
inline constexpr int kAgentMaxReceiveBytes = 2 * kMaxBodyBytes;
inline constexpr int kAgentMaxSendBytes = 64 << 20;
inline constexpr int kAgentMaxStreamsPerConnection = 16;
inline constexpr int64_t kAgentMemoryQuotaBytes = int64_t{256} << 20;
inline constexpr int kAgentMaxThreads = 64;

// A certificate, key or token file (PEM chains are a few KB).
inline constexpr int64_t kMaxCredentialFileBytes = 1 << 20;
// A bearer token: at least 128 bits (`openssl rand -hex 32` gives 64 characters).
inline constexpr int kMinTokenBytes = 16;

// Scenario: cells of one matrix (targets × every axis).
inline constexpr int64_t kMaxCells = 100'000;
inline constexpr double kMaxCellRate = 1e12;  // load.rate and the rate axis: over a cell's threads
inline constexpr int64_t kMaxRepetitions = 100;
inline constexpr int64_t kMaxLoadAgents = 1'000;  // placement.load.agents
// A scenario's `include`: how deep includes nest, how many files one scenario reads in all,
// and how large each may be (a scenario is a few KB; this stops /dev/zero-like mistakes).
inline constexpr int kMaxIncludeDepth = 16;
inline constexpr int kMaxScenarioFiles = 64;
inline constexpr int64_t kMaxScenarioFileBytes = 16 << 20;
// execution: retries of a failed repetition, the waits between them and between cells.
inline constexpr int64_t kMaxRetries = 100;
inline constexpr double kMaxRetryBackoffS = 300;
inline constexpr double kMaxCooldownS = 3'600;
// execution.remeasure_disturbed: how many times a disturbed cell may be measured again, and the
// first wait between those times (it doubles).
inline constexpr int64_t kMaxRemeasures = 10;
inline constexpr double kMaxRemeasureWaitS = 3'600;
inline constexpr double kMaxSkewMs = 3'600'000;  // execution.max_skew_ms
// execution.deadlines: how long each phase of a repetition may take before it is cancelled.
inline constexpr double kMinDeadlineS = 0.1;
inline constexpr double kMaxReadyS = 86'400;
inline constexpr double kMaxWarmupExtraS = 86'400;
inline constexpr double kMaxMeasureS = 7 * 86'400;
inline constexpr double kMaxStopS = 3'600;

// Controller: a regression's threshold (the scenario's regression.threshold_pct and
// `loadlab compare --threshold-pct`), and `loadlab history --last N` runs.
inline constexpr double kMaxThresholdPct = 1'000;
inline constexpr int64_t kMaxHistoryRuns = 1'000'000;
// The nightly verdict (regression.*, --baseline-nights): the share of nights of unchanged code
// allowed to alarm, and how many earlier nights make a cell's band.
inline constexpr double kMinFalseAlarmPct = 0.001;
inline constexpr double kMaxFalseAlarmPct = 50;
inline constexpr int64_t kMaxBaselineNights = 1'000;

// A metrics endpoint (loadlab-agent and loadlab run --metrics-listen): connections served at
// once, of them those not yet proven (no scrape answered yet: anyone who reaches the port can
// open them, so the rest stay for proven scrapers; shared/metrics/src/server.cpp says how), a
// request's header (a scrape's is a few hundred bytes), how long an unproven connection may
// take to send its request (a scraper sends it at once), and how long a proven one may wait
// between scrapes.
inline constexpr int kMetricsMaxConnections = 32;
inline constexpr int kMetricsMaxUnprovenConnections = 24;
inline constexpr int kMetricsMaxHeaderBytes = 8192;
inline constexpr int kMetricsFirstRequestTimeoutS = 5;
inline constexpr int kMetricsIdleTimeoutS = 30;

}  // namespace loadlab::limits
