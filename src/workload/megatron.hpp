// Workloads from a Megatron-LM run as its users keep it: the launch script (or a file of bare
// arguments) that passes --num-attention-heads, --group-query-attention --num-query-groups,
// --kv-channels, --seq-length, --context-parallel-size, --cp-comm-type, --attention-backend,
// --multi-latent-attention, --window-size, --softmax-type, --fp8-format, --bf16, ... to
// pretrain_gpt.py, or a Megatron-Bridge / NeMo 2 YAML recipe whose keys are the same
// TransformerConfig fields. Arguments the doctor does not read are ignored (and counted in a
// note); a malformed value of one it reads is an error naming the argument. Layers that attend
// differently (--window-size with --window-attn-skip-freq, a per-layer --cp-comm-type list, a
// hybrid pattern) give one workload per variant, as Hugging Face configs do.
#pragma once

#include "model/workload.hpp"
#include "util/result.hpp"
#include "workload/shell_words.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace workload {

// The workloads of a launch script or argument file's text (see script_words for what of
// the shell is read; `environment` gives the variables the script reads but does not set), not
// completed, named after `name`. Fails with "source:line: --argument: reason" on a malformed
// value, a value the script leaves unknown, or a combination Megatron-LM itself refuses.
util::Result<std::vector<model::Workload>> parse_megatron_script(std::string_view text, std::string_view source,
                                                                 const workload::ScriptEnvironment& environment, const std::string& name);

// The same from a Megatron-Bridge ConfigContainer or NeMo 2 recipe in YAML (model:, mixed_precision:,
// dataset:, train: sections; NeMo 2's model.config, trainer.strategy, trainer.plugins, data).
util::Result<std::vector<model::Workload>> parse_megatron_yaml(std::string_view text, std::string_view source, const std::string& name);

// One of the two by the file's extension (.yaml / .yml: a recipe), named after the file stem.
util::Result<std::vector<model::Workload>> load_megatron_args(const std::filesystem::path& path,
                                                              const workload::ScriptEnvironment& environment);

} // namespace workload
