// Workloads from a Hugging Face config.json: one per distinct attention variant of the model.
// A model whose layers attend differently (Gemma-2's sliding and global layers, gpt-oss's
// alternating 128-token windows, Llama 4's chunked and global layers, T5's encoder, decoder and
// cross-attention) yields one named workload per variant ("gemma-2-9b/sliding"); hybrids
// (Jamba, Zamba, Nemotron-H, Qwen3-Next) yield their attention layers only; attention-free
// models (Mamba, RWKV) are an error. Features that TE has no parameter for are kept as workload
// keys (attn_logit_softcapping, attention_chunk_size) so that the rules can say what TE does
// with them instead of dropping them.
#pragma once

#include "model/workload.hpp"
#include "util/result.hpp"

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace workload {

struct HfOptions {
  // A context window above this becomes this max_seqlen (training rarely uses the full context;
  // the note says so, and --workload-set max_seqlen_q=N overrides it). 0 = no cap.
  std::int64_t max_seqlen_cap = 8192;
};

// The workloads of a config.json's text, not completed. Each is named after the model
// (_name_or_path, else the directory holding config.json, else the file stem of source), with
// "/<variant>" when the model has more than one attention variant; Workload::notes says how
// each value was derived and which layers the variant covers; Workload::assumed lists what the
// config could not say (layout, training, dtype without torch_dtype). Fails, naming source and
// the key, when the JSON is malformed, lacks the attention shape, has no attention layers, or
// describes its layers in a way the doctor does not know.
util::Result<std::vector<model::Workload>> parse_hf_config(std::string_view json_text, std::string_view source,
                                                           const HfOptions& options = {});

// parse_hf_config on a file (at most 4 MiB).
util::Result<std::vector<model::Workload>> load_hf_config(const std::filesystem::path& path, const HfOptions& options = {});

} // namespace workload
