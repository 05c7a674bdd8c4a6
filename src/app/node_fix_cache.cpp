#include "app/node_fix_cache.hpp"

#include "app/command_io.hpp"
#include "util/hash.hpp"
#include "util/logging.hpp"


namespace app {

namespace {

constexpr std::string_view k_kind = "node_fixes";

// The question: everything verify_node_findings reads. The probe's own timings
// (probe.<name>.seconds) differ on every run; they are left out only when no node rule may read
// them (no shipped rule does; a rules directory whose rule did would ask anew each time).
std::string question(const rules::RuleSet& rules, const model::Facts& facts) {
  std::vector<std::string> timings;
  for (const auto& [name, value] : facts.entries())
    if (name.starts_with("probe.") && name.ends_with(".seconds")) timings.push_back(name);
  std::string head = "node fixes 1\nrules " + rules.digest() + "\n";
  if (rules::node_rules_may_read(rules, timings)) return head + facts.to_json(-1);
  model::Facts stable = facts;
  for (const auto& name : timings) stable.erase(name);
  return head + stable.to_json(-1);
}

std::string encode_fix(const model::Fix& fix) {
  std::vector<std::string> parts{fix.kind, fix.command, fix.description, fix.unverified_reason, fix.refuted ? "1" : "0"};
  parts.push_back(fix.verified ? "1" : "0");
  if (fix.verified) parts.insert(parts.end(), {fix.verified->backend, fix.verified->sub_backend, fix.verified->clears});
  for (const auto& [name, value] : fix.changes) parts.insert(parts.end(), {name, value});
  return util::pack_strings(parts);
}

std::optional<model::Fix> decode_fix(std::string_view text) {
  auto parts = util::unpack_strings(text);
  if (!parts || parts->size() < 6) return std::nullopt;
  const auto& p = *parts;
  model::Fix fix;
  fix.kind = p[0];
  fix.command = p[1];
  fix.description = p[2];
  fix.unverified_reason = p[3];
  fix.refuted = p[4] == "1";
  std::size_t at = 6;
  if (p[5] == "1") {
    if (p.size() < 9) return std::nullopt;
    fix.verified = model::FixOutcome{p[6], p[7], p[8]};
    at = 9;
  }
  if ((p.size() - at) % 2 != 0) return std::nullopt;
  for (; at < p.size(); at += 2) fix.changes.emplace_back(p[at], p[at + 1]);
  return fix;
}

} // namespace

std::string encode_node_fixes(const std::vector<model::Finding>& findings) {
  std::vector<std::string> parts;
  for (const auto& f : findings) {
    std::vector<std::string> fixes{f.id};
    for (const auto& fix : f.fixes) fixes.push_back(encode_fix(fix));
    parts.push_back(util::pack_strings(fixes));
  }
  return util::pack_strings(parts);
}

bool decode_node_fixes(std::string_view text, std::vector<model::Finding>& findings) {
  auto parts = util::unpack_strings(text);
  if (!parts || parts->size() != findings.size()) return false;
  std::vector<std::vector<model::Fix>> decoded(findings.size());
  for (std::size_t i = 0; i < findings.size(); ++i) {
    auto fixes = util::unpack_strings((*parts)[i]);
    if (!fixes || fixes->empty() || fixes->front() != findings[i].id) return false;
    for (std::size_t k = 1; k < fixes->size(); ++k) {
      auto fix = decode_fix((*fixes)[k]);
      if (!fix) return false;
      decoded[i].push_back(std::move(*fix));
    }
  }
  for (std::size_t i = 0; i < findings.size(); ++i) findings[i].fixes = std::move(decoded[i]);
  return true;
}

void verify_node_findings_cached(const Options& options, const rules::RuleSet& rules, const model::Facts& facts,
                                 std::vector<model::Finding>& findings, const rules::SearchOptions& search) {
  // A few answers (this node's last ones; a shared home's nodes each add theirs), each with its
  // whole question, so the file stays small.
  util::FileCache::Limits limits;
  limits.max_entries = 8;
  limits.max_value_bytes = 1u << 20;
  auto cache = open_cache_file(options, "check-fixes.cache", limits);
  if (!cache || !cache->enabled()) return rules::verify_node_findings(rules, facts, findings, search);
  const std::string asked = question(rules, facts);
  // The slot is a digest of the question; the value holds the question itself, compared whole.
  const std::string slot = util::hex_digest128(asked);
  const util::FileIdentity none{}; // the question says everything; no file stands behind it
  if (auto stored = cache->find(k_kind, slot, none)) {
    auto parts = util::unpack_strings(*stored);
    if (parts && parts->size() == 2 && (*parts)[0] == asked && decode_node_fixes((*parts)[1], findings)) {
      util::log::debug("check: node fixes from the cache (the same facts and rules as a run before)");
      return;
    }
  }
  rules::verify_node_findings(rules, facts, findings, search);
  cache->put(k_kind, slot, none, util::pack_strings(std::vector<std::string>{asked, encode_node_fixes(findings)}));
  cache->save();
}

} // namespace app
