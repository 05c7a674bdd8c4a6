#include "rules/knowledge.hpp"

#include "util/strings.hpp"

#include <algorithm>

namespace rules {

namespace {

// Release level: the first three components, so a build number (cuDNN's fourth) or a pre-release
// tag of the same release never counts as newer.
bool newer_release(const model::Version& version, const model::Version& newest) {
  for (std::size_t i = 0; i < 3; ++i) {
    if (version.component(i) != newest.component(i)) return version.component(i) > newest.component(i);
  }
  return false;
}

std::optional<model::Version> newest_in_catalog(const Catalog& catalog, std::string_view fact) {
  std::optional<model::Version> newest;
  for (const Package* package : catalog.for_fact(fact))
    for (const auto& release : package->releases)
      if (!newest || release.version > *newest) newest = release.version;
  return newest;
}

std::string cc_text(long sm) { return std::to_string(sm / 10) + "." + std::to_string(sm % 10); }

// A version fact beyond the newest known release becomes an Extrapolated entry.
void check_version(const model::Facts& facts, std::string_view fact, const std::optional<model::Version>& newest, model::Knowledge& out) {
  auto value = facts.get_version(fact);
  if (!value || !newest || !newer_release(*value, *newest)) return;
  out.extrapolated.push_back({std::string(fact), value->to_string(), newest->to_string()});
}

} // namespace

model::Knowledge knowledge_horizon(const RuleSet& rules, const model::Facts& facts) {
  const Selection& selection = rules.selection();
  model::Knowledge k;
  k.newest_te_modelled = selection.newest_te_modelled;
  k.newest_te_published = selection.default_te_version;
  if (!facts.has("te.version")) k.assumed_te = selection.default_te_version;
  auto text = [](const std::optional<model::Version>& v) { return v ? v->to_string() : std::string(); };
  auto cudnn = newest_in_catalog(rules.catalog(), "cudnn.version");
  auto fa2 = newest_in_catalog(rules.catalog(), "flash_attn.version");
  auto fa3 = newest_in_catalog(rules.catalog(), "flash_attn_3.version");
  auto fa4 = newest_in_catalog(rules.catalog(), "flash_attn_4.version");
  k.newest_cudnn_known = text(cudnn);
  k.newest_flash_attn_known = text(fa2);
  k.newest_flash_attn_3_known = text(fa3);
  k.newest_flash_attn_4_known = text(fa4);
  std::vector<long> sms = selection.modelled_sms;
  std::sort(sms.begin(), sms.end());
  for (long sm : sms) k.modelled_compute_capabilities.push_back(cc_text(sm));

  std::optional<model::Version> te_modelled;
  if (auto v = model::Version::parse(selection.newest_te_modelled)) te_modelled = *v;
  check_version(facts, "te.version", te_modelled, k);
  check_version(facts, "cudnn.version", cudnn, k);
  check_version(facts, "flash_attn.version", fa2, k);
  check_version(facts, "flash_attn_3.version", fa3, k);
  check_version(facts, "flash_attn_4.version", fa4, k);
  if (!sms.empty()) {
    std::vector<long> seen;
    for (std::size_t i = 0, n = facts.count("gpu"); i < n; ++i) {
      auto sm = facts.get_int("gpu[" + std::to_string(i) + "].sm");
      if (!sm || std::binary_search(sms.begin(), sms.end(), static_cast<long>(*sm))) continue;
      if (std::find(seen.begin(), seen.end(), *sm) != seen.end()) continue;
      seen.push_back(static_cast<long>(*sm));
      k.extrapolated.push_back(
          {"gpu.compute_capability", cc_text(static_cast<long>(*sm)), util::join(k.modelled_compute_capabilities, ", ")});
    }
  }
  return k;
}

std::optional<model::Finding> knowledge_finding(const model::Knowledge& knowledge) {
  if (knowledge.extrapolated.empty()) return std::nullopt;
  model::Finding f;
  f.id = std::string(model::k_knowledge_finding_id);
  f.severity = model::Severity::warning;
  f.area = "knowledge";
  std::vector<std::string> named, details;
  for (const auto& e : knowledge.extrapolated) {
    named.push_back(e.fact + " " + e.value);
    f.evidence.emplace_back(e.fact, e.value);
    if (e.fact == "gpu.compute_capability")
      details.push_back("compute capability " + e.value + " is not among the GPU architectures TE's selection was checked on (" + e.newest +
                        ")");
    else details.push_back(e.fact + " " + e.value + " is newer than the newest release the rules know (" + e.newest + ")");
  }
  f.title = "Beyond what the rules model: " + util::join(named, ", ") + "; verdicts are extrapolated";
  f.message = util::join(details, "; ") +
              ". The verdicts for this node apply the rules of the newest known releases and architectures; TE, cuDNN or "
              "flash-attn may have changed what they accept since. Rules from a newer nvte-doctor (or a newer rules "
              "bundle) cover more; until then, confirm the backend with NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2 in the first run.";
  model::Fix debug;
  debug.kind = "debug";
  debug.command = "export NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2";
  debug.description = "makes TE log the backend it really selects, to compare with the extrapolated verdict";
  debug.unverified_reason = "a logging aid: it changes what TE prints, not what it selects";
  f.fixes.push_back(std::move(debug));
  return f;
}

} // namespace rules
