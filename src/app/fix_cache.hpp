// check's fix searches across runs. On a GPU node with TE the fix searches (the node's findings,
// then each workload's findings and backend reasons) are most of what check adds to the probe,
// and each is a function of the facts, the rules and the workload alone: a prolog or timer that
// checks an unchanged node with the same workloads asks the same questions every time. Each
// answer is kept in check-fixes.cache (the cache directory; the binary's identity is the file's
// tag) under the BLAKE2b-256 digest of its whole question: every fact but the probe's timings
// (unless a rule may read them), the rules' digest and, for a workload, everything it says. Only
// the answer is stored (a digest nobody can make collide stands for the question), and it is used
// only when its fixes are for exactly this run's findings and reasons, in order.
#pragma once

#include "app/options.hpp"
#include "model/explanation.hpp"
#include "model/facts.hpp"
#include "model/finding.hpp"
#include "model/observed_selection.hpp"
#include "rules/fix_search.hpp"
#include "rules/rules.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace util {
class FileCache;
}

namespace app {

class FixCache {
public:
  // Searches every question (the explain command, a sweep).
  FixCache() = default;
  // check-fixes.cache in the options' cache directory; with --no-cache, or without a usable
  // directory, every question is searched.
  explicit FixCache(const Options& options);

  // rules::verify_node_findings, from the cache when these facts and rules were searched before.
  // findings are evaluate_node's for these facts.
  void verify_node_findings(const rules::RuleSet& rules, const model::Facts& facts, std::vector<model::Finding>& findings,
                            const rules::SearchOptions& search) const;
  // rules::verify_explanation, from the cache when this workload was searched before with these
  // facts and rules. explanation is rules::explain's for them.
  void verify_explanation(const rules::RuleSet& rules, const model::Facts& facts, model::Explanation& explanation,
                          const rules::SearchOptions& search) const;
  // app::unify_pins_per_context, from the cache when these workloads' fixes, with these node
  // findings' (nullptr: none), facts and rules, were unified before. After the searches.
  void unify_pins(const rules::RuleSet& rules, const model::Facts& node, std::vector<model::Explanation>& explanations,
                  const std::vector<std::shared_ptr<const model::ObservedSelection>>& observed, std::vector<model::Finding>* node_findings,
                  const rules::SearchOptions& search) const;
  // Writes the answers this run added (once, after the searches); a failure is a debug line.
  void save() const;
  // How many questions this object answered from the cache.
  std::size_t answered() const { return m_answered.load(); }

private:
  std::shared_ptr<util::FileCache> m_cache;
  mutable std::atomic<std::size_t> m_answered{0};
};

// The encodings of the answers, and back; decode fails (false, nothing changed) unless the text
// holds fixes for exactly these findings (ids, in order) and, for an explanation, these backends'
// reasons (keys and rules, in order). Public for the tests.
std::string encode_node_fixes(const std::vector<model::Finding>& findings);
bool decode_node_fixes(std::string_view text, std::vector<model::Finding>& findings);
std::string encode_explanation_fixes(const model::Explanation& explanation);
bool decode_explanation_fixes(std::string_view text, model::Explanation& explanation);

} // namespace app
