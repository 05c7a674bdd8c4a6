// Workloads from TransformerEngine's own debug log (NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2), as users
// paste it: TE's `Running with config={...}` line (its node facts and every AttentionParams
// field), then its `Disabling ...` lines, `Available backends = {...}` and `Selected backend =
// ...`, or the "No dot product attention backend is available" ValueError. The wording of
// these lines as TE 1.12 to 2.20 write them; any prefix before them (Ray's `(WorkerDict
// pid=...)`, torchrun's `[rank0]:`, timestamps, logger names) is skipped.
//
// One workload per distinct config (a log of many layers and steps repeats the same few): the
// last block of each wins, with the lines that follow it in the same process (lines are told
// apart by a `pid=N` or `rankN` in their prefix, so interleaved ranks do not mix). At most
// util::k_max_explained_records (50) distinct configs become workloads: a log with more is an
// error naming the line of the first config past the cap (exit 3, never a verdict on part of it).
#pragma once

#include "model/observed_selection.hpp"
#include "model/workload.hpp"
#include "util/result.hpp"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

namespace workload {

// One workload of the log and what TE logged about it: the node it ran on (observed.node_facts:
// te.version without its +local part, gpu.sm, cudnn.version, cuda.runtime_version, the
// flash-attn versions, NVTE_* settings), TE's own verdict and the fields read (for -v).
struct TeLogWorkload {
  model::Workload workload; // not completed
  std::shared_ptr<const model::ObservedSelection> observed;
};

struct TeLog {
  std::vector<TeLogWorkload> workloads;
  std::size_t config_lines = 0;          // `Running with config=` lines read (repeats included)
  std::size_t ignored_lines = 0;         // non-empty lines that are none of TE's selection lines
};

// The workloads of a log's text, named after `name` ("name" for one, "name[i]" for several).
// Fails, naming source, when no `Running with config=` line is in it, on the config line that
// is one distinct config more than util::k_max_explained_records, or on a config line whose
// dictionary does not close or whose value for a field the doctor reads is malformed or out of
// its range ("source:line: workload key head_dim_qk: must be positive, got -128").
util::Result<TeLog> parse_te_log(std::string_view text, std::string_view source, const std::string& name);

// parse_te_log on a file, or standard input for "-", read line by line (util::read_lines: the
// same limits for both, 256 MiB in all and 16 MiB a line; "larger than N bytes (limit N)" past
// them); named after the file stem ("te-log" for standard input).
util::Result<TeLog> load_te_log(const std::filesystem::path& path);

} // namespace workload
