// The verdict of one workload. A verdict is a promise that the job runs, so the order of the
// questions matters: can the doctor tell at all (a GPU and a TE release to reason about), does TE
// select a backend, and then does anything known make that backend fail (a finding that says so,
// a self-test that failed at this shape), or put it at risk.
#include "rules/verdict.hpp"

#include "util/strings.hpp"

#include <algorithm>

namespace rules {

namespace {

model::Verdict from_effect(model::VerdictEffect effect) {
  switch (effect) {
  case model::VerdictEffect::none: return model::Verdict::runs;
  case model::VerdictEffect::at_risk: return model::Verdict::at_risk;
  case model::VerdictEffect::unknown: return model::Verdict::unknown;
  case model::VerdictEffect::fails: return model::Verdict::fails;
  }
  return model::Verdict::runs;
}

bool concerns(const model::Finding& f, const std::string& backend) {
  return f.verdict_backends.empty() || std::find(f.verdict_backends.begin(), f.verdict_backends.end(), backend) != f.verdict_backends.end();
}

std::string selection_label(const model::WorkloadVerdict& v) {
  if (!v.backend) return "no backend";
  return *v.backend + (v.sub_backend ? " (" + *v.sub_backend + ")" : "");
}

} // namespace

void decide_verdict(model::Explanation& e, const VerdictInputs& in) {
  model::WorkloadVerdict v;
  v.backend = e.selected;
  if (e.selected) {
    const char* key = *e.selected == "FusedAttention" ? "fused_attention" : *e.selected == "FlashAttention" ? "flash_attention" : "";
    if (auto it = e.backends.find(std::string_view(key)); *key && it != e.backends.end()) v.sub_backend = it->second.sub_backend;
  }
  v.evidence = model::EvidenceKind::predicted;
  v.evidence_text = "predicted from TE " + e.te_version + "'s selection code";
  if (in.observed && in.observed->selected_known && in.observed->changed.empty()) {
    // What TE itself logged for this run is the selection; the doctor's model only explains it.
    // Once the command line changed what TE ran with (--set, --workload-set), it is a prediction.
    v.evidence = model::EvidenceKind::observed;
    v.evidence_text = "observed in TE's own log (" + in.observed->source + ")";
    v.backend = in.observed->raised_no_backend ? std::nullopt : in.observed->selected;
    if (v.backend != e.selected) v.sub_backend = v.backend == "FusedAttention" ? in.observed->fused_sub_backend : std::nullopt;
  }

  const model::Facts* facts = in.facts;
  const bool gpu_known = facts && facts->get_int("gpu.count").value_or(0) > 0;
  if (!gpu_known && v.evidence != model::EvidenceKind::observed) {
    v.verdict = model::Verdict::unknown;
    v.because = "no GPU is known: this machine has none and no snapshot of the job's node was given";
    v.how_to_know = "pass --facts FILE (nvte-doctor probe --format json on the job's node) or --set gpu.compute_capability=X";
    // Without a GPU, TE's selection is for a GPU nobody named: no backend is promised or blamed,
    // and line 2 must not claim a prediction either.
    v.evidence_text = "nothing predicted: no GPU to predict for";
    v.backend.reset();
    v.sub_backend.reset();
    e.verdict = std::move(v);
    return;
  }
  if (e.te_version_assumed && v.evidence != model::EvidenceKind::observed) {
    v.verdict = model::Verdict::unknown;
    v.because = "TransformerEngine is not installed: TE " + e.te_version + " would select " + selection_label(v);
    v.how_to_know = "--set te.version=X (the TE release the job uses), or run where the job's TE is installed";
    e.verdict = std::move(v);
    return;
  }

  // The findings that can change the verdict, worst effect first, the workload's before the node's.
  const model::Finding* decided = nullptr;
  model::Verdict verdict = v.backend ? model::Verdict::runs : model::Verdict::no_backend;
  auto consider = [&](const model::Finding& f) {
    if (f.verdict == model::VerdictEffect::none) return;
    if (model::Verdict effect = from_effect(f.verdict); effect > verdict) {
      verdict = effect;
      decided = &f;
    }
  };
  if (verdict == model::Verdict::no_backend) {
    // No backend: the finding that says so (attention-no-backend, or a requested backend that is
    // out) carries the fix.
    for (const auto& f : e.findings)
      if (f.severity == model::Severity::error && (!decided || f.id == "attention-no-backend")) decided = &f;
  } else {
    for (const auto& f : e.findings)
      if (concerns(f, *v.backend)) consider(f);
    if (in.node_findings)
      for (const auto& f : *in.node_findings)
        if (concerns(f, *v.backend)) consider(f);
  }

  // The self-test at this shape: a failure of the selected backend is the strongest evidence
  // there is; a pass makes the verdict one that ran here.
  if (in.selftest && in.workload_index >= 0 && v.backend) {
    const model::SelftestCheck* failed = nullptr;
    bool ran = false;
    for (const auto& c : in.selftest->checks) {
      if (c.workload != in.workload_index || c.backend != *v.backend || c.status == "skipped") continue;
      ran = true;
      if ((c.status == "failed" || c.status == "error") && !failed) failed = &c;
    }
    if (ran) {
      v.evidence = model::EvidenceKind::ran;
      v.evidence_text = "ran here: the self-test ran " + *v.backend + " at this shape";
    }
    if (failed) {
      verdict = model::Verdict::fails;
      v.because = "the self-test's " + failed->check + " check failed at this shape: " + util::one_line(failed->error);
      v.evidence_text = "ran here: the self-test's " + failed->check + " failed at [" + failed->label + "]";
      // A finding that already put the workload at risk explains the failure and has its fix
      // (two cuDNN copies: CUDNN_PATH); its title is the cause, the self-test the proof.
      if (decided) v.because = decided->title + "; " + v.because;
      if (failed->fix_verified == "here" && failed->fix)
        v.because += "; with `" + failed->fix->command + "` it passed here (verified by re-running the check)";
    }
  }

  v.verdict = verdict;
  if (decided) {
    v.finding = decided->id;
    if (v.because.empty()) v.because = decided->title;
    if (const model::Fix* fix = model::best_fix(decided->fixes)) v.fix = *fix;
    // A finding that makes the answer unknowable says how to get it (its first fix's words).
    if (verdict == model::Verdict::unknown)
      for (const auto& fix : decided->fixes)
        if (v.how_to_know.empty()) v.how_to_know = fix.command.empty() ? fix.description : fix.command;
  }
  if (verdict == model::Verdict::no_backend && v.because.empty()) v.because = "TE selects no attention backend for this workload";
  e.verdict = std::move(v);
}

namespace {

bool explains(const model::Finding& f, const model::SelftestCheck& c) {
  if (std::find(f.explains.begin(), f.explains.end(), c.failure_class) == f.explains.end()) return false;
  return c.backend.empty() || f.verdict_backends.empty() ||
         std::find(f.verdict_backends.begin(), f.verdict_backends.end(), c.backend) != f.verdict_backends.end();
}

const model::Fix* fix_of(const model::Finding& f) {
  if (const model::Fix* best = model::best_fix(f.fixes)) return best;
  for (const auto& fix : f.fixes)
    if (!fix.command.empty() && !model::is_counterfactual(fix)) return &fix;
  return nullptr;
}

} // namespace

void join_selftest_failures(model::SelftestSummary& selftest, const std::vector<model::Finding>& node_findings,
                            const std::vector<model::Explanation>& workloads) {
  for (auto& c : selftest.checks) {
    if (c.failure_class.empty() || !c.explained_by.empty()) continue;
    const model::Finding* found = nullptr;
    if (c.workload >= 0 && static_cast<std::size_t>(c.workload) < workloads.size())
      for (const auto& f : workloads[static_cast<std::size_t>(c.workload)].findings)
        if (!found && explains(f, c)) found = &f;
    for (const auto& f : node_findings)
      if (!found && explains(f, c)) found = &f;
    if (!found) continue;
    c.explained_by = found->id;
    if (const model::Fix* fix = fix_of(*found)) c.fix = *fix;
  }
}

} // namespace rules
