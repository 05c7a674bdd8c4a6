// Which kind of workload input a text is — a workload file, a Hugging Face config.json, Megatron-LM
// arguments (a launch script, an argument file or a recipe) or TE's debug log — told from a few
// markers of each, so that a file given to the wrong option gets "this looks like Megatron-LM
// arguments: use --megatron-args" instead of the wrong parser's complaint.
#pragma once

#include <string_view>

namespace workload {

enum class InputKind { unknown, workload, hf_config, megatron_args, te_log };

// The kind the text's first 64 KiB look like; unknown when no marker of any kind is there.
// TE's log markers are checked first (a log may quote a command line), then a JSON object with
// Hugging Face's keys, then Megatron-LM's flags and recipe keys, then workload keys.
InputKind sniff_input_kind(std::string_view text);

// "Megatron-LM arguments", "--megatron-args": for the message.
std::string_view describe(InputKind kind);
std::string_view option_for(InputKind kind);

} // namespace workload
