#include "app/fix_cache.hpp"

#include "app/command_io.hpp"
#include "app/workloads.hpp"
#include "util/digest.hpp"
#include "util/file_cache.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"

#include <map>
#include <mutex>

namespace app {

namespace {

// The kinds of answer, with their encodings' versions: another encoding is another question.
constexpr std::string_view k_node = "node_fixes 2";
constexpr std::string_view k_workload = "workload_fixes 1";
constexpr std::string_view k_pins = "unified_pins 1";

// The probe's own timings (probe.<name>.seconds) differ on every run.
bool is_timing(std::string_view name) { return name.starts_with("probe.") && name.ends_with(".seconds"); }

// Whether a rule may read one of the timings: the same answer for every question of a check,
// worked out once per rules (by their digest) and timings (a walk of every rule and template:
// half of asking).
bool timings_read(const rules::RuleSet& rules, const std::vector<std::string>& timings) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, bool> known;
  std::string names = util::join(timings, "\n");
  std::lock_guard lock(mutex);
  auto key = std::make_pair(rules.digest(), std::move(names));
  if (auto it = known.find(key); it != known.end()) return it->second;
  bool read = rules::rules_may_read(rules, timings);
  if (known.size() > 64) known.clear(); // a long-lived process may load many rules sets
  known.emplace(std::move(key), read);
  return read;
}

// The facts of a question, each with its exact value, in one field; the timings are left out
// unless a rule may read them (no shipped rule does; a rules directory whose rule did would ask
// anew each time).
void add_facts(util::Digest256& digest, const rules::RuleSet& rules, const model::Facts& facts) {
  std::vector<std::string> timings;
  for (const auto& [name, value] : facts.entries())
    if (is_timing(name)) timings.push_back(name);
  const bool with_timings = timings.empty() || timings_read(rules, timings);
  digest.field(with_timings ? facts.exact_text() : facts.exact_text(is_timing));
}

void add_strings(util::Digest256& digest, const std::vector<std::string>& strings) {
  digest.field(std::to_string(strings.size()));
  for (const auto& s : strings) digest.field(s);
}

std::string node_question(const rules::RuleSet& rules, const model::Facts& facts) {
  util::Digest256 digest;
  digest.field(k_node).field(rules.digest());
  add_facts(digest, rules, facts);
  return digest.hex();
}

void add_workload(util::Digest256& digest, const model::Workload& workload) {
  digest.field(workload.name).field(std::to_string(workload.values.size()));
  for (const auto& [key, value] : workload.values) digest.field(key).field(value.exact_text());
  add_strings(digest, workload.assumed);
  add_strings(digest, workload.notes);
}

// A workload's question: the node's (its facts as the workload sees them) and the workload whole.
std::string workload_question(const rules::RuleSet& rules, const model::Facts& facts, const model::Workload& workload) {
  util::Digest256 digest;
  digest.field(k_workload).field(rules.digest());
  add_facts(digest, rules, facts);
  add_workload(digest, workload);
  return digest.hex();
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

// Fixes under a head of names ({id} for a finding, {backend, rule} for a reason) and back: the
// decoded fixes when the head is the one given.
std::string encode_fixes(std::vector<std::string> head, const std::vector<model::Fix>& fixes) {
  head.insert(head.begin(), std::to_string(head.size()));
  for (const auto& fix : fixes) head.push_back(encode_fix(fix));
  return util::pack_strings(head);
}

std::optional<std::vector<model::Fix>> decode_fixes(std::string_view text, const std::vector<std::string>& head) {
  auto parts = util::unpack_strings(text);
  if (!parts || parts->size() < head.size() + 1 || (*parts)[0] != std::to_string(head.size())) return std::nullopt;
  for (std::size_t i = 0; i < head.size(); ++i)
    if ((*parts)[i + 1] != head[i]) return std::nullopt;
  std::vector<model::Fix> fixes;
  for (std::size_t k = head.size() + 1; k < parts->size(); ++k) {
    auto fix = decode_fix((*parts)[k]);
    if (!fix) return std::nullopt;
    fixes.push_back(std::move(*fix));
  }
  return fixes;
}

// The stored answer for question, when there is one.
std::optional<std::string> find_answer(util::FileCache* cache, std::string_view question) {
  if (!cache) return std::nullopt;
  return cache->find("answer", question, util::FileIdentity{}); // the question says everything
}

} // namespace

std::string encode_node_fixes(const std::vector<model::Finding>& findings) {
  std::vector<std::string> parts;
  parts.reserve(findings.size());
  for (const auto& f : findings) parts.push_back(encode_fixes({f.id}, f.fixes));
  return util::pack_strings(parts);
}

bool decode_node_fixes(std::string_view text, std::vector<model::Finding>& findings) {
  auto parts = util::unpack_strings(text);
  if (!parts || parts->size() != findings.size()) return false;
  std::vector<std::vector<model::Fix>> decoded(findings.size());
  for (std::size_t i = 0; i < findings.size(); ++i) {
    auto fixes = decode_fixes((*parts)[i], {findings[i].id});
    if (!fixes) return false;
    decoded[i] = std::move(*fixes);
  }
  for (std::size_t i = 0; i < findings.size(); ++i) findings[i].fixes = std::move(decoded[i]);
  return true;
}

std::string encode_explanation_fixes(const model::Explanation& explanation) {
  std::vector<std::string> reasons;
  for (const auto& [key, verdict] : explanation.backends)
    for (const auto& reason : verdict.reasons) reasons.push_back(encode_fixes({key, reason.rule}, reason.fixes));
  return util::pack_strings(std::vector<std::string>{encode_node_fixes(explanation.findings), util::pack_strings(reasons)});
}

bool decode_explanation_fixes(std::string_view text, model::Explanation& explanation) {
  auto parts = util::unpack_strings(text);
  if (!parts || parts->size() != 2) return false;
  auto reasons = util::unpack_strings((*parts)[1]);
  if (!reasons) return false;
  std::vector<std::vector<model::Fix>> decoded;
  for (const auto& [key, verdict] : explanation.backends) {
    for (const auto& reason : verdict.reasons) {
      if (decoded.size() == reasons->size()) return false;
      auto fixes = decode_fixes((*reasons)[decoded.size()], {key, reason.rule});
      if (!fixes) return false;
      decoded.push_back(std::move(*fixes));
    }
  }
  if (decoded.size() != reasons->size()) return false;
  std::vector<model::Finding> findings = explanation.findings;
  if (!decode_node_fixes((*parts)[0], findings)) return false;
  explanation.findings = std::move(findings);
  std::size_t i = 0;
  for (auto& [key, verdict] : explanation.backends)
    for (auto& reason : verdict.reasons) reason.fixes = std::move(decoded[i++]);
  return true;
}

FixCache::FixCache(const Options& options) {
  // A few answers per node: its own and its workloads' (a shared home's nodes each add theirs).
  util::FileCache::Limits limits;
  limits.max_entries = 64;
  limits.max_value_bytes = 1u << 20;
  m_cache = open_cache_file(options, "check-fixes.cache", limits);
  if (m_cache && !m_cache->enabled()) m_cache.reset();
}

void FixCache::verify_node_findings(const rules::RuleSet& rules, const model::Facts& facts, std::vector<model::Finding>& findings,
                                    const rules::SearchOptions& search) const {
  if (!m_cache) return rules::verify_node_findings(rules, facts, findings, search);
  const std::string question = node_question(rules, facts);
  if (auto stored = find_answer(m_cache.get(), question); stored && decode_node_fixes(*stored, findings)) {
    util::log::debug("check: node fixes from the cache (the same facts and rules as a run before)");
    ++m_answered;
    return;
  }
  rules::verify_node_findings(rules, facts, findings, search);
  m_cache->put("answer", question, util::FileIdentity{}, encode_node_fixes(findings));
}

void FixCache::verify_explanation(const rules::RuleSet& rules, const model::Facts& facts, model::Explanation& explanation,
                                  const rules::SearchOptions& search) const {
  if (!m_cache) return rules::verify_explanation(rules, facts, explanation, search);
  const std::string question = workload_question(rules, facts, explanation.workload);
  if (auto stored = find_answer(m_cache.get(), question); stored && decode_explanation_fixes(*stored, explanation)) {
    util::log::debug("check: " + explanation.workload.name +
                     "'s fixes from the cache (the same facts, rules and workload as a run before)");
    ++m_answered;
    return;
  }
  rules::verify_explanation(rules, facts, explanation, search);
  m_cache->put("answer", question, util::FileIdentity{}, encode_explanation_fixes(explanation));
}

void FixCache::unify_pins(const rules::RuleSet& rules, const model::Facts& node, std::vector<model::Explanation>& explanations,
                          const std::vector<std::shared_ptr<const model::ObservedSelection>>& observed,
                          std::vector<model::Finding>* node_findings, const rules::SearchOptions& search) const {
  if (!m_cache) return unify_pins_per_context(rules, node, explanations, observed, node_findings, search);
  // The question: what unifying reads, the node's facts and the rules, each workload with the
  // node facts its TE log names and its searched fixes, and the node findings' fixes.
  util::Digest256 digest;
  digest.field(k_pins).field(rules.digest());
  add_facts(digest, rules, node);
  digest.field(std::to_string(explanations.size()));
  for (std::size_t i = 0; i < explanations.size(); ++i) {
    add_workload(digest, explanations[i].workload);
    const model::ObservedSelection* seen = i < observed.size() ? observed[i].get() : nullptr;
    digest.field(seen ? std::to_string(seen->node_facts.size()) : "-");
    if (seen)
      for (const auto& [name, value] : seen->node_facts) digest.field(name).field(value);
    digest.field(encode_explanation_fixes(explanations[i]));
  }
  digest.field(node_findings ? encode_node_fixes(*node_findings) : "-");
  const std::string question = digest.hex();
  if (auto stored = find_answer(m_cache.get(), question)) {
    // Decoded into copies: the answer is taken whole or not at all.
    auto parts = util::unpack_strings(*stored);
    if (parts && parts->size() == explanations.size() + 1) {
      std::vector<model::Finding> findings = node_findings ? *node_findings : std::vector<model::Finding>{};
      std::vector<model::Explanation> unified = explanations;
      bool whole = decode_node_fixes((*parts)[0], findings);
      for (std::size_t i = 0; whole && i < unified.size(); ++i) whole = decode_explanation_fixes((*parts)[i + 1], unified[i]);
      if (whole) {
        if (node_findings) *node_findings = std::move(findings);
        explanations = std::move(unified);
        util::log::debug("check: one pin per package from the cache (the same fixes as a run before)");
        ++m_answered;
        return;
      }
    }
  }
  unify_pins_per_context(rules, node, explanations, observed, node_findings, search);
  std::vector<std::string> parts{encode_node_fixes(node_findings ? *node_findings : std::vector<model::Finding>{})};
  for (const auto& e : explanations) parts.push_back(encode_explanation_fixes(e));
  m_cache->put("answer", question, util::FileIdentity{}, util::pack_strings(parts));
}

void FixCache::save() const {
  if (m_cache) m_cache->save();
}

} // namespace app
