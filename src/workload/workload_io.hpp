// Workload importers: the attention workload (model::Workload, TE's AttentionParams vocabulary)
// from a YAML or JSON workload file, from a Hugging Face config.json, and from --workload-set
// KEY=VALUE lists. The loaders type and check every value through Workload::set_text and leave
// completion (defaults, derived keys) to finish_workload, so that command-line settings can be
// applied on top of a file before defaults are filled in.
#pragma once

#include "model/workload.hpp"
#include "util/result.hpp"

#include <cstdint>
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

struct HfOptions {
  // max_position_embeddings above this becomes this max_seqlen (training rarely uses the full
  // context window; the note says so, and --workload-set max_seqlen_q=N overrides it).
  std::int64_t max_seqlen_cap = 8192;
};

struct HfImport {
  model::Workload workload;       // not completed; assumed lists what config.json did not say
  std::vector<std::string> notes; // how values were derived (capped seqlen, MLA dims, window)
};

// A workload from the text of a Hugging Face config.json (Llama, Mistral/Mixtral, Qwen2/3,
// DeepSeek-V2/V3 MLA, and models of the same shape). Defaults that a config cannot say (bshd,
// causal mask, training, bf16 without torch_dtype) are set and recorded in Workload::assumed.
// Fails when the JSON is malformed or lacks the attention shape (num_attention_heads and
// hidden_size or head_dim).
util::Result<HfImport> parse_hf_config(std::string_view json_text, std::string_view source,
                                       const HfOptions& options = {});

// parse_hf_config on a file; the workload is named after _name_or_path, else the directory that
// holds config.json, else the file stem.
util::Result<HfImport> load_hf_config(const std::filesystem::path& path, const HfOptions& options = {});

// Applies "KEY=VALUE" settings in order (later wins); each key set this way is no longer
// "assumed". Fails on a setting without '=', an unknown key (with a did-you-mean) or a bad value.
util::Result<void> apply_workload_settings(model::Workload& workload, std::span<const std::string> settings);

// Completes the workload (defaults, derived keys, consistency checks); an error names the
// workload: "<name>: num_heads (16) is not divisible by num_gqa_groups (5)".
util::Result<void> finish_workload(model::Workload& workload);

// The nearest workload key to an unknown one ("head_dim" -> "head_dim_qk"), or "" when none is
// close enough to suggest.
std::string suggest_workload_key(std::string_view unknown);

} // namespace workload
