// Fuzz target: the condition language of `when:` (lexer, parser, type checker) and, for what
// compiles, the evaluator against a small node. The reader maps each slot to the node's fact the
// way the engine does (collection-relative names read element 0 and element 1).
#include "fuzz_common.hpp"
#include "rules/condition.hpp"

#include <string>

namespace {

class FactsReader final : public rules::detail::Reader {
public:
  FactsReader(const rules::detail::SlotTable& table, const model::Facts& facts, std::size_t element)
      : m_table(table), m_facts(facts), m_element(element) {}
  const model::Value* fact(int slot) override {
    const auto& spec = m_table.slots().at(static_cast<std::size_t>(slot));
    if (spec.collection < 0) return m_facts.get(spec.name);
    const auto& prefix = m_table.collections().at(static_cast<std::size_t>(spec.collection));
    m_name = prefix + "[" + std::to_string(m_element) + "]." + spec.field;
    return m_facts.get(m_name);
  }
  std::size_t count(int collection) override {
    return m_facts.count(m_table.collections().at(static_cast<std::size_t>(collection)));
  }

private:
  const rules::detail::SlotTable& m_table;
  const model::Facts& m_facts;
  std::size_t m_element;
  std::string m_name;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rules::detail::SlotTable table;
  std::vector<rules::detail::SourceError> errors;
  auto condition = rules::detail::compile_condition(fuzz::as_text(data, size), table, errors);
  if (!condition) return 0;
  for (std::size_t element = 0; element < 2; ++element) {
    FactsReader reader(table, fuzz::small_node(), element);
    (void)rules::detail::evaluate(*condition, reader);
  }
  return 0;
}
