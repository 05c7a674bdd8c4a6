// Putting a rules database together from its files (loader.cpp validates and compiles one file):
// each file's compiled rules (stored in the binary for a shipped file, compiled_form.hpp, else
// compiled from its tree: stored, preparsed.hpp, or parsed) come from one task per file, several
// files at once, each into its own slot table and registry; the parts are then merged in file
// order (renumber.cpp). `check` waits for
// the rules after probing, and compiling them on one thread was its critical path on a GPU node
// (docs/records/performance.md, "Issue 40, round 5"). What one file says about another (an id,
// a package or a second `selection:` defined twice) is said where compiling in turn says it: when
// the parts clash, the files are compiled again in order into one table, as before.
#include "rules/loader_internal.hpp"

#include "rules/compiled_form.hpp"
#include "rules/preparsed.hpp"
#include "util/hash.hpp"
#include "util/logging.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <numeric>
#include <set>

namespace rules::detail {

namespace {

Selection default_selection() {
  Selection s;
  SelectionOrder order;
  order.backends = {"FlashAttention", "FusedAttention", "UnfusedDotProductAttention"};
  order.fused_sub_backends = {{"fp8", {"FP8"}}, {"default", {"F16_arbitrary_seqlen", "F16_max512_seqlen"}}};
  s.orders.push_back(std::move(order));
  return s;
}

// Whether two files define the same rule id or package, or both a `selection:` block.
bool parts_clash(const std::vector<FilePart>& parts) {
  std::set<std::string_view> ids, packages;
  int selections = 0;
  for (const auto& part : parts) {
    for (const auto& [id, at] : part.registry.ids)
      if (!ids.insert(id).second) return true;
    for (const auto& [name, at] : part.registry.packages)
      if (!packages.insert(name).second) return true;
    if (part.registry.selection_at && ++selections > 1) return true;
  }
  return false;
}

void merge(FilePart& part, RuleSet::Impl& impl, std::vector<Diagnostic>& diagnostics) {
  for (auto& d : part.diagnostics) diagnostics.push_back(std::move(d));
  SlotTable::Renumbering renumbering = impl.slots.absorb(part.impl.slots);
  for (auto& rule : part.impl.rules) {
    renumber(rule, renumbering);
    impl.rules.push_back(std::move(rule));
  }
  for (auto& package : part.impl.catalog.packages) impl.catalog.packages.push_back(std::move(package));
  if (part.registry.selection_at) impl.selection = std::move(part.impl.selection);
  if (part.impl.default_te_version) impl.default_te_version = std::move(part.impl.default_te_version);
}

// The digest of the files, taken from the binary when they are exactly the shipped files.
std::string digest_of(const std::vector<SourceFile>& files, const std::vector<FilePart>& parts) {
  auto shipped = preparsed_files();
  bool all_shipped = !preparsed_digest().empty() && files.size() == shipped.size();
  for (std::size_t i = 0; all_shipped && i < files.size(); ++i)
    all_shipped = parts[i].shipped == &shipped[i] && files[i].relative == shipped[i].relative;
  return all_shipped ? std::string(preparsed_digest()) : database_digest(files);
}

// The file's tree: the stored one of a shipped file, else libyaml's.
ParsedFile parse(const SourceFile& file, const PreparsedFile* shipped) {
  ParsedFile parsed;
  if (!shipped || !(parsed.document = YamlDocument::from_binary(shipped->tree)))
    parsed.document = YamlDocument::parse(file.text, parsed.problem);
  return parsed;
}

void finish(RuleSet::Impl& impl) {
  for (std::size_t i = 0; i < impl.rules.size(); ++i) impl.rule_index.try_emplace(impl.rules[i].summary.id, i);
  if (impl.selection.orders.empty()) impl.selection.orders = default_selection().orders;
}

} // namespace

void compile_part(const SourceFile& file, FilePart& part, TestCases tests, StoredForm stored) {
  part.shipped = preparsed_file(file.text);
  // The stored form is what compiling this name and text gives (the area of a rule without
  // `area:` is its file's name): a copy under another name compiles.
  if (stored == StoredForm::use && tests == TestCases::count && part.shipped && !part.shipped->compiled.empty() &&
      part.shipped->relative == file.relative && decode_compiled(part.shipped->compiled, file, part))
    return;
  part.impl.selection = default_selection();
  // The tree is freed on this thread too (a tenth of loading the shipped rules).
  compile_file(file, parse(file, part.shipped), part.impl, part.diagnostics, part.registry, tests);
}

std::string database_digest(const std::vector<SourceFile>& files) {
  std::vector<const SourceFile*> sorted;
  sorted.reserve(files.size());
  for (const auto& file : files) sorted.push_back(&file);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->relative < b->relative; });
  std::uint64_t hash = k_digest_seed;
  const std::string_view nul("\0", 1);
  for (const auto* file : sorted) {
    hash = util::fnv1a64(nul, util::fnv1a64(file->relative, hash));
    hash = util::fnv1a64(nul, util::fnv1a64(file->text, hash));
  }
  return util::hex64(hash);
}

std::shared_ptr<RuleSet::Impl> load_impl(const std::vector<SourceFile>& files, std::vector<Diagnostic>& diagnostics, TestCases tests,
                                         StoredForm stored) {
  util::log::Laps laps("rules");
  std::vector<FilePart> parts(files.size());
  // The largest files first, so that no thread is left with a large one at the end.
  std::vector<std::size_t> order(files.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return files[a].text.size() > files[b].text.size(); });
  util::parallel_for(files.size(), std::min(util::available_cpus(), k_compile_threads), [&](std::size_t k) {
    std::size_t i = order[k];
    compile_part(files[i], parts[i], tests, stored);
  });
  laps.lap("files compiled (" + std::to_string(files.size()) + ")");

  auto impl = std::make_shared<RuleSet::Impl>();
  impl->selection = default_selection();
  if (parts_clash(parts)) {
    Registry registry; // a broken database: parsing again costs nothing that matters
    for (std::size_t i = 0; i < files.size(); ++i)
      compile_file(files[i], parse(files[i], parts[i].shipped), *impl, diagnostics, registry, tests);
  } else {
    for (auto& part : parts) merge(part, *impl, diagnostics);
  }
  impl->digest = digest_of(files, parts);
  finish(*impl);
  return impl;
}

std::shared_ptr<RuleSet::Impl> load_impl_in_order(const std::vector<SourceFile>& files, std::vector<Diagnostic>& diagnostics,
                                                  TestCases tests) {
  auto impl = std::make_shared<RuleSet::Impl>();
  impl->selection = default_selection();
  Registry registry;
  for (const auto& file : files) compile_file(file, parse(file, preparsed_file(file.text)), *impl, diagnostics, registry, tests);
  impl->digest = database_digest(files);
  finish(*impl);
  return impl;
}

LoadResult load_files(const std::vector<SourceFile>& files, std::vector<Diagnostic> diagnostics, TestCases tests) {
  auto impl = load_impl(files, diagnostics, tests);
  LoadResult result;
  result.diagnostics = std::move(diagnostics);
  if (result.diagnostics.empty()) result.rules = RuleSet::from_impl(std::move(impl));
  return result;
}

} // namespace rules::detail
