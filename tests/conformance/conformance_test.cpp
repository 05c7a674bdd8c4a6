// Knowledge conformance: replays what TE's own selector answered (tests/conformance/*.jsonl,
// written by tools/te-conformance) through the path `explain` takes — an empty snapshot with
// --set facts, --workload-set keys, the shipped rules — and compares, per tag: the selected
// backend, each backend's availability, FusedAttention's sub-backend and FlashAttention's
// major version. Disagreements listed in docs/knowledge.md ("Known disagreements") are
// allowed up to 1% of a tag's records; any other fails the test.
//
//   conformance_test [--show N] [--tag TAG] [--case SUBSTRING] [--rules DIR] [--data DIR]
//
// prints the agreement table, then up to N disagreements per tag (default 10) with TE's debug
// lines and the doctor's reasons, which is what one needs to fix a rule.
#include "app/command_io.hpp"
#include "app/options.hpp"
#include "app/workloads.hpp"
#include "model/version.hpp"
#include "rules/rules.hpp"
#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

struct Case {
  std::vector<std::string> sets;          // --set KEY=VALUE
  std::vector<std::string> workload_sets; // --workload-set KEY=VALUE
};

// Plain members (no Json): the struct's special members then cannot throw.
struct Expected {
  std::optional<std::string> selected;
  bool flash = false;               // FlashAttention available
  std::optional<int> flash_major;   // its flash-attn major (2, 3, 4) where TE says it
  std::optional<std::string> fused; // the sub-backend where FusedAttention is available
  bool unfused = false;
  std::vector<std::string> reasons;
};

std::string text_of(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<long>());
  if (value.is_number_float()) {
    std::ostringstream out;
    out << value.get<double>();
    return out.str();
  }
  return value.dump();
}

std::vector<Json> read_jsonl(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::vector<Json> lines;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    Json parsed = Json::parse(line, nullptr, false);
    if (parsed.is_discarded()) throw std::runtime_error(file.string() + ":" + std::to_string(number) + ": not JSON");
    lines.push_back(std::move(parsed));
  }
  if (lines.empty()) throw std::runtime_error(file.string() + ": empty");
  return lines;
}

// A case from its facts and the workload keys that differ from the defaults.
Case case_of(const Json& line, const Json& defaults) {
  Case c;
  for (const auto& [key, value] : line.at("facts").items()) c.sets.push_back(key + "=" + text_of(value));
  Json workload = defaults;
  workload.update(line.at("workload"));
  for (const auto& [key, value] : workload.items()) c.workload_sets.push_back(key + "=" + text_of(value));
  return c;
}

struct CaseTable {
  Json defaults;
  std::map<std::string, Case> cases;
};

CaseTable read_cases(const fs::path& file) {
  auto lines = read_jsonl(file);
  CaseTable table{lines[0].at("workload_defaults"), {}};
  for (std::size_t i = 1; i < lines.size(); ++i)
    table.cases.emplace(lines[i].at("name").get<std::string>(), case_of(lines[i], table.defaults));
  return table;
}

// docs/knowledge.md, section "Known disagreements": a table whose first two columns are the
// tag and the case name (backquoted).
std::set<std::pair<std::string, std::string>> read_known(const fs::path& file) {
  std::set<std::pair<std::string, std::string>> known;
  std::ifstream in(file);
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.starts_with("## ")) in_section = line.find("Known disagreements") != std::string::npos;
    if (!in_section || !line.starts_with("| `")) continue;
    auto cell = [&](std::size_t n) {
      std::size_t start = 0;
      for (std::size_t i = 0; i <= n; ++i) start = line.find('|', start) + 1;
      std::size_t end = line.find('|', start);
      std::string text = line.substr(start, end - start);
      text.erase(std::remove(text.begin(), text.end(), '`'), text.end());
      auto first = text.find_first_not_of(' ');
      auto last = text.find_last_not_of(' ');
      return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
    };
    known.insert({cell(0), cell(1)});
  }
  return known;
}

struct Outcome {
  std::string what; // empty when the doctor agrees
};

std::string describe_doctor(const model::Explanation& e) {
  std::string out = "doctor: selected " + e.selected.value_or("none");
  for (const auto& [name, verdict] : e.backends) {
    out += "; " + name + (verdict.available ? " yes" : verdict.deprioritized ? " yes (preferred against)" : " no");
    if (verdict.sub_backend) out += " (" + *verdict.sub_backend + ")";
    for (const auto& reason : verdict.reasons) out += " [" + reason.rule + "]";
  }
  return out;
}

std::string compare(const model::Explanation& e, const Expected& te) {
  std::vector<std::string> diffs;
  auto backend = [&](const char* name) -> const model::BackendVerdict& { return e.backends.at(name); };
  if (e.selected != te.selected)
    diffs.push_back("selected: TE " + te.selected.value_or("none") + ", doctor " + e.selected.value_or("none"));
  // TE's available_backends lists FlashAttention even where it then yields to FusedAttention
  // on Hopper+: a deprioritized backend counts as available.
  const auto& flash = backend("flash_attention");
  bool flash_available = flash.available || flash.deprioritized;
  bool te_flash = te.flash;
  if (flash_available != te_flash)
    diffs.push_back(std::string("flash_attention: TE ") + (te_flash ? "yes" : "no") + ", doctor " + (flash_available ? "yes" : "no"));
  else if (te_flash && te.flash_major && flash.sub_backend && *flash.sub_backend != "FlashAttention" + std::to_string(*te.flash_major))
    diffs.push_back("flash_attention version: TE " + std::to_string(*te.flash_major) + ", doctor " + *flash.sub_backend);
  const auto& fused = backend("fused_attention");
  bool te_fused = te.fused.has_value();
  bool fused_available = fused.available || fused.deprioritized;
  if (fused_available != te_fused)
    diffs.push_back(std::string("fused_attention: TE ") + (te_fused ? *te.fused : "no") + ", doctor " +
                    (fused_available ? fused.sub_backend.value_or("yes") : "no"));
  else if (te_fused && fused.sub_backend != *te.fused)
    diffs.push_back("fused sub-backend: TE " + *te.fused + ", doctor " + fused.sub_backend.value_or("none"));
  const auto& unfused = backend("unfused_attention");
  if ((unfused.available || unfused.deprioritized) != te.unfused)
    diffs.push_back(std::string("unfused_attention: TE ") + (te.unfused ? "yes" : "no") + ", doctor " + (unfused.available ? "yes" : "no"));
  std::string out;
  for (const auto& d : diffs) out += (out.empty() ? "" : "; ") + d;
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t show = 10;
  std::string only_tag, only_case;
  fs::path rules_dir = NVTE_RULES_DIR;
  fs::path data = NVTE_CONFORMANCE_DIR;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--show" && i + 1 < argc) show = std::stoul(argv[++i]);
    else if (arg == "--tag" && i + 1 < argc) only_tag = argv[++i];
    else if (arg == "--case" && i + 1 < argc) only_case = argv[++i];
    else if (arg == "--rules" && i + 1 < argc) rules_dir = argv[++i];
    else if (arg == "--data" && i + 1 < argc) data = argv[++i];
    else {
      std::cerr << "usage: conformance_test [--show N] [--tag TAG] [--case SUBSTRING] [--rules DIR] [--data DIR]\n";
      return 2;
    }
  }
  auto started = std::chrono::steady_clock::now();
  try {
    auto loaded = rules::RuleSet::load({rules_dir}, rules::TestCases::count);
    if (!loaded.rules) {
      std::cerr << rules::render(loaded.diagnostics);
      return 1;
    }
    const rules::RuleSet& ruleset = *loaded.rules;
    auto table = read_cases(data / "cases.jsonl");
    const auto& cases = table.cases;
    auto known = read_known(NVTE_KNOWLEDGE_DOC);
    // The empty snapshot `explain --facts` would read, read once (110k records: re-reading it was
    // half the test's time); each record then gets its --set facts and derive(), as load_facts does.
    std::ifstream snapshot_in(NVTE_EMPTY_SNAPSHOT);
    std::string snapshot_text((std::istreambuf_iterator<char>(snapshot_in)), std::istreambuf_iterator<char>());
    auto parsed_snapshot = model::Facts::from_json(snapshot_text, NVTE_EMPTY_SNAPSHOT);
    if (!parsed_snapshot) throw std::runtime_error(parsed_snapshot.error().message);
    const model::Facts empty_snapshot = std::move(*parsed_snapshot);

    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(data))
      // te-<tag>.jsonl: TE's selector at a tag with the machine stubbed (te_conformance.py), cases
      // in cases.jsonl; live-<node>-<tag>-cudnn<v>.jsonl: an installed TE on a real GPU
      // (live.py), each record with its own facts (the node's, as TE saw them).
      if ((entry.path().filename().string().starts_with("te-") || entry.path().filename().string().starts_with("live-")) &&
          entry.path().extension() == ".jsonl")
        files.push_back(entry.path());
    // In release order (the header's te_version), so the table reads like TE's history.
    std::vector<std::pair<model::Version, fs::path>> ordered;
    for (const auto& file : files) {
      std::ifstream in(file);
      std::string first;
      std::getline(in, first);
      Json header = Json::parse(first, nullptr, false);
      if (header.is_discarded() || !header.contains("te_version")) throw std::runtime_error(file.string() + ": no header line");
      auto version = model::Version::parse(header["te_version"].get<std::string>());
      if (!version) throw std::runtime_error(file.string() + ": " + version.error().message);
      ordered.emplace_back(*version, file);
    }
    std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    files.clear();
    for (auto& [version, file] : ordered) files.push_back(file);

    // One tag per thread: the tags are independent, and 110k records took ~17 s of CPU in one.
    struct TagResult {
      bool asked = false;
      std::string row;
      std::vector<std::string> details;
      std::size_t records = 0;
      bool failed = false;
    };
    auto check_file = [&](const fs::path& file) {
      TagResult result;
      auto lines = read_jsonl(file);
      const Json& header = lines[0];
      std::string tag = header.at("tag");
      if (!only_tag.empty() && tag != only_tag) return result;
      std::string te_version = header.at("te_version");
      std::vector<std::string> reason_table = header.at("reasons").get<std::vector<std::string>>();
      std::size_t agree = 0, known_count = 0, unknown = 0, shown = 0, records = 0;
      for (std::size_t i = 1; i < lines.size(); ++i) {
        const Json& record = lines[i];
        std::string name = record.at("case");
        if (!only_case.empty() && name.find(only_case) == std::string::npos) continue;
        Case inline_case;
        const Case* found = nullptr;
        if (record.contains("facts")) {
          inline_case = case_of(record, table.defaults);
          found = &inline_case;
        } else if (auto it = cases.find(name); it != cases.end()) {
          found = &it->second;
        } else {
          throw std::runtime_error(file.string() + ": case '" + name + "' is not in cases.jsonl");
        }
        ++records;
        app::Options options;
        options.workload_sets = found->workload_sets;
        model::Explanation explanation;
        std::string refused; // the doctor could not take the case (an unknown value, say)
        try {
          // What app::load_facts does with --set on a snapshot, on the snapshot read once.
          model::Facts facts = empty_snapshot;
          for (const auto& assignment : found->sets)
            if (auto applied = facts.apply_override(assignment); !applied) throw util::Fatal{applied.error().message};
          if (auto applied = facts.apply_override("te.version=" + te_version); !applied) throw util::Fatal{applied.error().message};
          facts.derive();
          auto workloads = app::load_workloads(options);
          explanation = rules::explain(ruleset, facts, workloads.at(0));
        } catch (const util::Fatal& fatal) {
          refused = fatal.message;
        }

        const Json& te = record.at("te");
        Expected expected;
        if (!te.at("selected").is_null()) expected.selected = te.at("selected").get<std::string>();
        // flash: false or the flash-attn major (null where TE named none); fused: false or the sub-backend.
        const Json& flash = te.at("flash");
        expected.flash = !(flash.is_boolean() && !flash.get<bool>());
        if (flash.is_number_integer()) expected.flash_major = flash.get<int>();
        if (te.at("fused").is_string()) expected.fused = te.at("fused").get<std::string>();
        expected.unfused = te.at("unfused").get<bool>();
        for (const auto& index : te.at("reasons")) expected.reasons.push_back(reason_table.at(index.get<std::size_t>()));

        std::string diff = refused.empty() ? compare(explanation, expected) : "the doctor refused the case: " + refused;
        if (diff.empty()) {
          ++agree;
          continue;
        }
        bool is_known = known.count({tag, name}) > 0;
        is_known ? ++known_count : ++unknown;
        if (!is_known && shown < show) {
          ++shown;
          std::string detail = tag + " " + name + ": " + diff + "\n    " + describe_doctor(explanation) + "\n    TE: ";
          for (const auto& r : expected.reasons) detail += r + " | ";
          result.details.push_back(detail);
        }
      }
      double rate = records ? 100.0 * static_cast<double>(agree) / static_cast<double>(records) : 100.0;
      char row[256];
      std::snprintf(row, sizeof row, "%-13s %-13s %8zu %8zu %8zu %8zu %7.2f%%\n", tag.c_str(), te_version.c_str(), records, agree,
                    known_count, unknown, rate);
      result.asked = true;
      result.row = row;
      result.records = records;
      result.failed = unknown > 0 || static_cast<double>(known_count) > 0.01 * static_cast<double>(records);
      return result;
    };
    std::vector<TagResult> results(files.size());
    std::vector<std::exception_ptr> errors(files.size());
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t i = next++; i < files.size(); i = next++) {
        try {
          results[i] = check_file(files[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(worker);
    for (auto& thread : threads) thread.join();
    for (const auto& error : errors)
      if (error) std::rethrow_exception(error);

    bool failed = false;
    std::size_t total = 0;
    std::printf("%-13s %-13s %8s %8s %8s %8s %8s\n", "tag", "TE", "records", "agree", "known", "unknown", "rate");
    std::vector<std::string> details;
    for (const auto& result : results) {
      if (!result.asked) continue;
      std::fputs(result.row.c_str(), stdout);
      total += result.records;
      failed = failed || result.failed;
      details.insert(details.end(), result.details.begin(), result.details.end());
    }
    for (const auto& d : details) std::printf("%s\n", d.c_str());
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("%zu records in %.1f s; %s\n", total, seconds, failed ? "FAILED" : "all tags agree");
    return failed ? 1 : 0;
  } catch (const std::exception& error) {
    std::cerr << "conformance_test: " << error.what() << "\n";
    return 1;
  }
}
