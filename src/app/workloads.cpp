#include "app/workloads.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include "util/input_guard.hpp"
#include "workload/hf_config.hpp"
#include "workload/input_kind.hpp"
#include "workload/megatron.hpp"
#include "workload/te_log.hpp"
#include "workload/workload_io.hpp"

namespace app {

namespace {

// A file its option could not read: when it looks like another kind of workload input, the
// message says which option takes it instead of the wrong parser's complaint.
[[noreturn]] void refuse(const std::filesystem::path& file, workload::InputKind expected, const util::Error& error) {
  if (file != "-") {
    if (auto text = util::read_input(file)) {
      auto kind = workload::sniff_input_kind(*text);
      if (kind != workload::InputKind::unknown && kind != expected) {
        throw util::Fatal{file.string() + ": this looks like " + std::string(workload::describe(kind)) + ", not " +
                          std::string(workload::describe(expected)) + ": use " + std::string(workload::option_for(kind)) + " " +
                          file.string()};
      }
    }
  }
  throw util::Fatal{error.message};
}

} // namespace

SourceWorkloads read_workloads(const Options& options) {
  SourceWorkloads source;
  auto& workloads = source.raw;
  for (const auto& file : options.workload_files) {
    auto loaded = workload::load_workload_file(file);
    if (!loaded) refuse(file, workload::InputKind::workload, loaded.error());
    for (auto& w : *loaded) workloads.push_back(std::move(w));
  }
  for (const auto& file : options.hf_configs) {
    auto imported = workload::load_hf_config(file);
    if (!imported) refuse(file, workload::InputKind::hf_config, imported.error());
    for (auto& w : *imported) workloads.push_back(std::move(w));
  }
  // A launch script reads the variables it does not set from the environment it runs in: the
  // doctor's own, so `SEQ_LEN=8192 nvte-doctor explain --megatron-args train.sh` works as the
  // script would.
  workload::ScriptEnvironment environment = [](std::string_view name) -> std::optional<std::string> {
    if (const char* value = std::getenv(std::string(name).c_str())) return std::string(value);
    return std::nullopt;
  };
  for (const auto& file : options.megatron_args) {
    auto imported = workload::load_megatron_args(file, environment);
    if (!imported) refuse(file, workload::InputKind::megatron_args, imported.error());
    for (auto& w : *imported) workloads.push_back(std::move(w));
  }
  // The TE logs' workloads come last: before them, none has a log.
  source.observed.assign(workloads.size(), nullptr);
  for (const auto& file : options.te_logs) {
    auto imported = workload::load_te_log(file);
    if (!imported) refuse(file, workload::InputKind::te_log, imported.error());
    for (auto& w : imported->workloads) {
      workloads.push_back(std::move(w.workload));
      source.observed.push_back(std::move(w.observed));
    }
  }
  if (workloads.empty()) {
    model::Workload w;
    w.name = "command-line";
    workloads.push_back(std::move(w));
    source.observed.push_back(nullptr);
    source.command_line_only = true;
  }
  return source;
}

std::vector<model::Workload> complete_workloads(const SourceWorkloads& source, const Options& options,
                                                const std::vector<std::string>& extra_settings,
                                                std::vector<std::shared_ptr<const model::ObservedSelection>>* observed) {
  std::vector<model::Workload> workloads;
  if (observed) observed->clear();
  // Without a file, the settings alone form a workload; without settings either, there is none.
  if (source.command_line_only && options.workload_sets.empty() && extra_settings.empty()) return workloads;
  // The importer could not tell whether batches are packed; a layout given here answers that.
  auto sets_layout = [](const std::vector<std::string>& settings) {
    return std::any_of(settings.begin(), settings.end(),
                       [](const std::string& s) { return s.starts_with("qkv_format=") || s.starts_with("qkv_layout="); });
  };
  const bool layout_given = sets_layout(options.workload_sets) || sets_layout(extra_settings);
  for (std::size_t i = 0; i < source.raw.size(); ++i) {
    model::Workload w = source.raw[i];
    auto applied = workload::apply_workload_settings(w, options.workload_sets);
    if (!applied) throw util::Fatal{w.name + ": " + applied.error().message};
    auto extra = workload::apply_workload_settings(w, extra_settings);
    if (!extra) throw util::Fatal{w.name + ": " + extra.error().message};
    if (layout_given) std::erase_if(w.notes, [](const std::string& note) { return note.starts_with("packing unknown"); });
    auto finished = workload::finish_workload(w);
    if (!finished) throw util::Fatal{finished.error().message};
    workloads.push_back(std::move(w));
    if (observed) observed->push_back(source.observed[i]);
  }
  return workloads;
}

std::vector<model::Workload> load_workloads(const Options& options, const std::vector<std::string>& extra_settings,
                                            std::vector<std::shared_ptr<const model::ObservedSelection>>* observed) {
  return complete_workloads(read_workloads(options), options, extra_settings, observed);
}

const model::Facts& facts_for(const model::Facts& node, const model::ObservedSelection* observed, model::Facts& scratch) {
  if (!observed || observed->node_facts.empty()) return node;
  scratch = node;
  for (const auto& [name, value] : observed->node_facts) {
    if (value.empty()) {
      scratch.erase(name);
      continue;
    }
    auto applied = scratch.apply_override(name + "=" + value);
    if (!applied) throw util::Fatal{observed->source + ": " + applied.error().message};
  }
  scratch.derive();
  return scratch;
}

void unify_pins_per_context(const rules::RuleSet& rules, const model::Facts& node, std::vector<model::Explanation>& explanations,
                            const std::vector<std::shared_ptr<const model::ObservedSelection>>& observed,
                            std::vector<model::Finding>* node_findings, const rules::SearchOptions& search) {
  // The context of a workload: the node facts its TE log names ("" for the node's own facts).
  auto context_of = [&](std::size_t i) {
    std::string key;
    if (i < observed.size() && observed[i])
      for (const auto& [name, value] : observed[i]->node_facts) key += name + "=" + value + "\n";
    return key;
  };
  std::map<std::string, std::vector<std::size_t>> contexts;
  contexts[""]; // the node's findings have a context even without workloads of the node
  for (std::size_t i = 0; i < explanations.size(); ++i) contexts[context_of(i)].push_back(i);
  for (const auto& [key, members] : contexts) {
    std::vector<model::Explanation*> group;
    for (std::size_t i : members) group.push_back(&explanations[i]);
    model::Facts scratch;
    const model::Facts& facts = key.empty() ? node : facts_for(node, observed[members.front()].get(), scratch);
    rules::unify_pins(rules, facts, group, key.empty() ? node_findings : nullptr, search);
  }
}

} // namespace app
