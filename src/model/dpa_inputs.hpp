// The pre-selection step: what TE's DotProductAttention does to its inputs before it calls
// get_attention_backend, per TE version. explain runs the rules on the workload this returns,
// so that a rule sees what TE's selector sees, not what the user typed:
//   determinism  NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 makes DotProductAttention deterministic (every
//                TE from 1.12), as torch.use_deterministic_algorithms does (the workload key);
//   FP8 recipe   inside an FP8 autocast (TE 2.8+), NVTE_DPA_FP8_RECIPE: F16 turns fp8_dpa and
//                fp8_mha off; DelayedScaling / Float8CurrentScaling / MXFP8BlockScaling (2.15+)
//                replace the autocast's recipe for attention where init_fp8_metadata has that
//                switch; before 2.15 a recipe other than delayed/current with fp8_dpa is refused;
//   window       check_set_window_size: a window the mask contradicts is corrected;
//   diagonal     causal masks align top-left, the *_bottom_right ones bottom-right, whatever
//                bottom_right_diagonal says;
//   KV cache     inference (TE < 2.2): causal and padding_causal become their bottom-right forms,
//                K and V leave the cache contiguous; (TE 2.2+): a padding mask is required,
//                padding_causal becomes padding_causal_bottom_right, K and V come from the cache
//                as bshd (qkv_format sbhd -> sbhd_2bshd, thd -> thd_2bshd), Q contiguous.
// Each change is a note on the workload; an input TE refuses (an assertion in forward) is noted
// and left as given.
#pragma once

#include "model/facts.hpp"
#include "model/version.hpp"
#include "model/workload.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace model {

// The qkv_format a layout implies: bshd_bs2hd -> bshd, sbhd_bshd_bshd -> sbhd_2bshd.
std::string qkv_format_of_layout(std::string_view layout);

// The diagonal step alone, also run by Workload::complete() for the mask as given: the common
// causal workload then reaches explain already aligned, and the per-explain step does not clone
// its values (a copy per explain cost a third of explain's rate). quiet: no note.
void align_diagonal_to_mask(Workload& w, const std::string& mask, bool quiet);

Workload selector_inputs(const Workload& given, const Facts& node, const std::optional<Version>& te);

} // namespace model
