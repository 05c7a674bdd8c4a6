// Workload importers: the attention workload (model::Workload, TE's AttentionParams vocabulary)
// from a YAML or JSON workload file and from --workload-set KEY=VALUE lists (Hugging Face
// config.json: hf_config.hpp; Megatron-LM arguments and recipes: megatron.hpp). The loaders type and check every value through Workload::set_text and leave
// completion (defaults, derived keys) to finish_workload, so that command-line settings can be
// applied on top of a file before defaults are filled in.
#pragma once

#include "model/workload.hpp"
#include "util/result.hpp"

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace workload {

// Workloads read from a YAML or JSON text that holds one workload mapping or a mapping with a
// `workloads:` list. Keys are model::workload_keys() names plus `name`; an unknown key, a wrong
// value or a syntax error is an error that starts with "source:line:column:" and, for unknown
// keys, suggests the nearest key. The workloads are not completed.
util::Result<std::vector<model::Workload>> parse_workload_text(std::string_view text, std::string_view source);

// parse_workload_text on a file's content; workloads without a `name` are named after the file
// stem (with "[i]" for the i-th entry of a list).
util::Result<std::vector<model::Workload>> load_workload_file(const std::filesystem::path& path);

// Applies "KEY=VALUE" settings in order (later wins); each key set this way is no longer
// "assumed". max_seqlen_q also moves max_seqlen_kv, and head_dim_qk head_dim_v, when the two
// were equal (self-attention; not MLA) and the settings do not name the second. Fails on a setting without '=', an unknown key (with a did-you-mean) or a bad value.
util::Result<void> apply_workload_settings(model::Workload& workload, std::span<const std::string> settings);

// Completes the workload (defaults, derived keys, consistency checks); an error names the
// workload: "<name>: num_heads (16) is not divisible by num_gqa_groups (5)".
util::Result<void> finish_workload(model::Workload& workload);

// The nearest workload key to an unknown one ("head_dim" -> "head_dim_qk"), or "" when none is
// close enough to suggest.
std::string suggest_workload_key(std::string_view unknown);

} // namespace workload
