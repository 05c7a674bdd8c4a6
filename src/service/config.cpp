// Config loading. The file is small and flat, so each section is a table of known keys with a
// setter; anything else is an error at its line and column, with the nearest known key as a
// hint. yaml-cpp throws; its exceptions stop here and become Result errors with the same
// "file:line:column:" prefix.
#include "service/config.hpp"

#include "util/edit_distance.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/path_trust.hpp"
#include "util/yaml_load.hpp"
#include "util/strings.hpp"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <sys/stat.h>
#include <map>

namespace service {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string_view to_string(SelftestPolicy policy) {
  switch (policy) {
  case SelftestPolicy::never: return "never";
  case SelftestPolicy::on_change: return "on_change";
  case SelftestPolicy::always: return "always";
  }
  return "never";
}

namespace {

// The number that text (trimmed) starts with and the unit after it; nullopt without digits.
std::optional<std::pair<long long, std::string_view>> number_and_unit(std::string_view text) {
  text = util::trim(text);
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  auto value = util::parse_int(text.substr(0, digits));
  if (!value) return std::nullopt;
  return std::pair{*value, text.substr(digits)};
}

} // namespace

std::optional<milliseconds> parse_duration(std::string_view text) {
  auto number = number_and_unit(text);
  if (!number) return std::nullopt;
  auto [value, unit] = *number;
  static const std::map<std::string_view, long long> k_units = {
      {"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"min", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  auto it = k_units.find(unit);
  if (it == k_units.end() || value > (1ll << 40)) return std::nullopt;
  return milliseconds(value * it->second);
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  auto number = number_and_unit(text);
  if (!number) return std::nullopt;
  long long value = number->first;
  std::string unit = util::to_lower(number->second);
  static const std::map<std::string, int, std::less<>> k_shift = {
      {"", 0}, {"b", 0}, {"k", 10}, {"kib", 10}, {"m", 20}, {"mib", 20}, {"g", 30}, {"gib", 30}};
  auto it = k_shift.find(unit);
  if (it == k_shift.end() || value > (1ll << 40)) return std::nullopt;
  return static_cast<std::uint64_t>(value) << it->second;
}

namespace {

struct Parser {
  fs::path origin;
  fs::path base; // directory of the file, for relative paths

  std::string where(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    if (mark.is_null()) return origin.string();
    return origin.string() + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  util::Error error(const YAML::Node& node, const std::string& message) const {
    return util::make_error(util::ErrorKind::invalid, where(node) + ": " + message);
  }

  util::Result<std::string> scalar(const YAML::Node& node, std::string_view key) const {
    if (!node.IsScalar()) return error(node, std::string(key) + " must be a single value");
    return node.Scalar();
  }
  util::Result<fs::path> path(const YAML::Node& node, std::string_view key) const {
    std::string text = NVTE_TRY(scalar(node, key));
    if (text.empty()) return error(node, std::string(key) + " is an empty path");
    fs::path p(text);
    return p.is_absolute() ? p : base / p;
  }
  util::Result<milliseconds> duration(const YAML::Node& node, std::string_view key) const {
    std::string text = NVTE_TRY(scalar(node, key));
    auto value = parse_duration(text);
    if (!value) return error(node, std::string(key) + ": '" + text + "' is not a duration (e.g. 30s, 15m, 2h, 1d, 500ms)");
    return *value;
  }
  util::Result<long long> integer(const YAML::Node& node, std::string_view key, long long min, long long max) const {
    std::string text = NVTE_TRY(scalar(node, key));
    auto value = util::parse_int(text);
    if (!value || *value < min || *value > max) {
      return error(node, std::string(key) + ": '" + text + "' is not a whole number from " + std::to_string(min) + " to " +
                             std::to_string(max));
    }
    return *value;
  }

  using Setter = std::function<util::Result<void>(const YAML::Node&)>;

  // Walks a mapping: every key must be in table; null values leave the default in place.
  util::Result<void> section(const YAML::Node& node, std::string_view name, const std::map<std::string, Setter, std::less<>>& table) const {
    if (!node.IsMap()) return error(node, std::string(name) + " must be a mapping of keys to values");
    for (const auto& item : node) {
      std::string key = item.first.Scalar();
      auto it = table.find(key);
      if (it == table.end()) {
        std::string message = "unknown key '" + key + "' in " + std::string(name);
        std::string best;
        std::size_t best_distance = 3;
        for (const auto& [known, _] : table) {
          std::size_t d = util::edit_distance(key, known, 2);
          if (d < best_distance) best_distance = d, best = known;
        }
        if (!best.empty()) message += "; did you mean '" + best + "'?";
        else {
          std::vector<std::string> names;
          names.reserve(table.size());
          for (const auto& [known, _] : table) names.push_back(known);
          message += " (known: " + util::join(names, ", ") + ")";
        }
        return error(item.first, message);
      }
      if (item.second.IsNull()) continue;
      NVTE_TRY_VOID(it->second(item.second));
    }
    return {};
  }
};

template <typename T> Parser::Setter set(T& field, std::function<util::Result<T>(const YAML::Node&)> read) {
  return [&field, read](const YAML::Node& node) -> util::Result<void> {
    field = NVTE_TRY(read(node));
    return {};
  };
}

util::Result<Config> parse_document(const YAML::Node& root, const Parser& p) {
  Config c;
  c.source = p.origin;
  if (root.IsNull()) return c;
  std::optional<fs::path> report, spool;
  PushConfig push;
  bool has_push = false;

  auto seconds_of = [](milliseconds ms) { return std::chrono::duration_cast<std::chrono::seconds>(ms); };
  std::map<std::string, Parser::Setter, std::less<>> outputs = {
      {"report", [&](const YAML::Node& n) -> util::Result<void> { report = NVTE_TRY(p.path(n, "outputs.report")); return {}; }},
      {"prometheus", [&](const YAML::Node& n) -> util::Result<void> { c.outputs.prometheus = NVTE_TRY(p.path(n, "outputs.prometheus")); return {}; }},
      {"nfd", [&](const YAML::Node& n) -> util::Result<void> { c.outputs.nfd = NVTE_TRY(p.path(n, "outputs.nfd")); return {}; }},
  };
  std::map<std::string, Parser::Setter, std::less<>> push_keys = {
      {"url",
       [&](const YAML::Node& n) -> util::Result<void> {
         push.url = NVTE_TRY(p.scalar(n, "push.url"));
         if (!util::starts_with(push.url, "https://") && !util::starts_with(push.url, "http://")) {
           return p.error(n, "push.url must start with https:// (or http:// for a loopback address)");
         }
         return {};
       }},
      {"method",
       [&](const YAML::Node& n) -> util::Result<void> {
         std::string method = NVTE_TRY(p.scalar(n, "push.method"));
         if (method == "POST") push.method = PushMethod::post;
         else if (method == "PUT") push.method = PushMethod::put;
         else return p.error(n, "push.method must be POST or PUT, not '" + method + "'");
         return {};
       }},
      {"token_file",
       [&](const YAML::Node& n) -> util::Result<void> {
         push.token_file = NVTE_TRY(p.path(n, "push.token_file"));
         return {};
       }},
      {"connect_timeout",
       set(push.connect_timeout, std::function([&](const YAML::Node& n) { return p.duration(n, "push.connect_timeout"); }))},
      {"timeout", set(push.timeout, std::function([&](const YAML::Node& n) { return p.duration(n, "push.timeout"); }))},
      {"backoff", set(push.backoff, std::function([&](const YAML::Node& n) { return p.duration(n, "push.backoff"); }))},
      {"max_backoff", set(push.max_backoff, std::function([&](const YAML::Node& n) { return p.duration(n, "push.max_backoff"); }))},
      {"retries",
       [&](const YAML::Node& n) -> util::
                                    Result<void> {
                                      push.retries = static_cast<int>(NVTE_TRY(p.integer(n, "push.retries", 0, 20)));
                                      return {};
                                    }},
      {"spool_dir",
       [&](const YAML::Node& n) -> util::
                                    Result<void> {
                                      spool = NVTE_TRY(p.path(n, "push.spool_dir"));
                                      return {};
                                    }},
      {"spool_max_reports",
       [&](const YAML::Node& n) -> util::
                                    Result<void> {
                                      push.spool_max_reports =
                                          static_cast<std::size_t>(NVTE_TRY(p.integer(n, "push.spool_max_reports", 1, 1'000'000)));
                                      return {};
                                    }},
      {"spool_max_bytes",
       [&](const YAML::Node& n) -> util::
                                    Result<void> {
                                      std::string text = NVTE_TRY(p.scalar(n, "push.spool_max_bytes"));
                                      auto bytes = parse_size(text);
                                      if (!bytes || *bytes < 1024)
                                        return p.error(n, "push.spool_max_bytes: '" + text + "' is not a size of at least 1K (e.g. 64M)");
                                      push.spool_max_bytes = *bytes;
                                      return {};
                                    }},
  };
  std::map<std::string, Parser::Setter, std::less<>> selftest = {
      {"policy", [&](const YAML::Node& n) -> util::Result<void> {
         std::string text = NVTE_TRY(p.scalar(n, "selftest.policy"));
         if (text == "never") c.selftest_policy = SelftestPolicy::never;
         else if (text == "on_change") c.selftest_policy = SelftestPolicy::on_change;
         else if (text == "always") c.selftest_policy = SelftestPolicy::always;
         else return p.error(n, "selftest.policy: '" + text + "' is not one of never, on_change, always");
         return {};
       }},
      {"timeout", [&](const YAML::Node& n) -> util::Result<void> { c.selftest_timeout = seconds_of(NVTE_TRY(p.duration(n, "selftest.timeout"))); return {}; }},
  };
  std::map<std::string, Parser::Setter, std::less<>> daemon = {
      {"debounce", set(c.debounce, std::function([&](const YAML::Node& n) { return p.duration(n, "daemon.debounce"); }))},
      {"watch", [&](const YAML::Node& n) -> util::Result<void> {
         if (!n.IsSequence()) return p.error(n, "daemon.watch must be a list of paths");
         for (const auto& item : n) c.watch.push_back(NVTE_TRY(p.path(item, "daemon.watch")));
         return {};
       }},
  };
  // `rules update` reads its keys itself (service/bundle.cpp); here the section only has to be known.
  std::map<std::string, Parser::Setter, std::less<>> rules_update = {
      {"public_keys", [&](const YAML::Node& n) -> util::Result<void> {
         if (!n.IsSequence()) return p.error(n, "rules_update.public_keys must be a list of base64 public keys");
         for (const auto& item : n) {
           if (!item.IsScalar()) return p.error(item, "rules_update.public_keys: not a string");
           c.rules_update_public_keys.push_back(item.Scalar());
         }
         return {};
       }},
      {"max_age_days", [&](const YAML::Node& n) -> util::Result<void> {
         (void)NVTE_TRY(p.integer(n, "rules_update.max_age_days", 0, 36500)); // read by check (rules/bundle.cpp)
         return {};
       }},
  };
  std::map<std::string, Parser::Setter, std::less<>> top = {
      {"workloads_dir",
       [&](const YAML::Node& n) -> util::Result<void> {
         c.workloads_dir = NVTE_TRY(p.path(n, "workloads_dir"));
         return {};
       }},
      {"rules",
       [&](const YAML::Node& n) -> util::Result<void> {
         if (n.IsScalar()) c.rules_dirs.push_back(NVTE_TRY(p.path(n, "rules")));
         else if (n.IsSequence()) {
           for (const auto& item : n) c.rules_dirs.push_back(NVTE_TRY(p.path(item, "rules")));
         } else return p.error(n, "rules must be a directory or a list of directories");
         return {};
       }},
      {"state_dir",
       [&](const YAML::Node& n) -> util::Result<void> {
         c.state_dir = NVTE_TRY(p.path(n, "state_dir"));
         return {};
       }},
      // Facts the node's probe cannot see, as --set gives them: the TE release the jobs bring in
      // their images (te.version=2.18.0) makes the workloads' verdicts promises instead of unknown.
      {"set",
       [&](const YAML::Node& n) -> util::Result<void> {
         if (!n.IsSequence()) return p.error(n, "set must be a list of KEY=VALUE (as --set takes them)");
         for (const auto& item : n) {
           if (!item.IsScalar() || item.Scalar().find('=') == std::string::npos || item.Scalar().front() == '=')
             return p.error(item, "set: expected KEY=VALUE, such as te.version=2.18.0");
           c.sets.push_back(item.Scalar());
         }
         return {};
       }},
      {"interval",
       [&](const YAML::Node& n) -> util::Result<void> {
         c.interval = seconds_of(NVTE_TRY(p.duration(n, "interval")));
         if (c.interval.count() < 1) return p.error(n, "interval must be at least 1s");
         return {};
       }},
      {"max_age",
       [&](const YAML::Node& n) -> util::Result<void> {
         c.max_age = seconds_of(NVTE_TRY(p.duration(n, "max_age")));
         return {};
       }},
      {"outputs", [&](const YAML::Node& n) { return p.section(n, "outputs", outputs); }},
      {"push",
       [&](const YAML::Node& n) -> util::Result<void> {
         has_push = true;
         NVTE_TRY_VOID(p.section(n, "push", push_keys));
         if (push.url.empty()) return p.error(n, "push needs a url");
         return {};
       }},
      {"selftest", [&](const YAML::Node& n) { return p.section(n, "selftest", selftest); }},
      {"daemon", [&](const YAML::Node& n) { return p.section(n, "daemon", daemon); }},
      {"rules_update", [&](const YAML::Node& n) { return p.section(n, "rules_update", rules_update); }},
  };
  NVTE_TRY_VOID(p.section(root, "the top level", top));

  c.outputs.report = report.value_or(c.state_dir / "report.json");
  if (has_push) {
    push.spool_dir = spool.value_or(c.state_dir / "spool");
    c.push = std::move(push);
  }
  return c;
}

} // namespace

util::Result<Config> parse_config(std::string_view text, const fs::path& origin) {
  Parser parser{origin, origin.has_parent_path() ? origin.parent_path() : fs::path(".")};
  YAML::Node root = NVTE_TRY(util::load_yaml(text, origin.string())); // depth, aliases, one document, as both parsers read it
  try {
    return parse_document(root, parser);
  } catch (const YAML::Exception& e) {
    return util::yaml_cpp_error(origin.string(), e);
  }
}

namespace {

// A directory the config names, and what is in it (as far down as the rules loader reads: 16
// levels, deeper is its error), must be the user's or root's and not writable by group or
// others. Past the entries cap the check cannot vouch for the rest: exit 3 naming the cap, never
// a silent pass (an entry past a cap was read unchecked). A missing directory is left to its
// reader's error.
util::Result<void> check_trusted_tree(const fs::path& dir, std::string_view what) {
  constexpr int k_max_depth = 16; // rules::detail::read_rule_files refuses deeper directories
  constexpr std::size_t k_max_entries = 10000;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  NVTE_TRY_VOID(util::check_trusted_path(dir, what));
  std::size_t seen = 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (++seen > k_max_entries)
      return util::Error{util::ErrorKind::invalid, std::string(what) + " " + dir.string() + ": more than " + std::to_string(k_max_entries) +
                                                       " entries to check (limit " + std::to_string(k_max_entries) +
                                                       ", the trusted-tree cap); keep only rules and workload files there"};
    if (it.depth() >= k_max_depth) it.disable_recursion_pending();
    // The directory's own path was walked above, and the iterator enters no symlinked
    // directory, so an entry that is no link is reached through trusted components alone: its
    // lstat settles it. Links and refusals take the full walk (and its message). Walking every
    // entry's path from / again was most of `run`'s configuration time (issue 40).
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && util::trusted_owner(st.st_uid) &&
        (st.st_mode & (S_IWGRP | S_IWOTH)) == 0)
      continue;
    NVTE_TRY_VOID(util::check_trusted_path(it->path(), std::string(what) + " entry"));
  }
  return {};
}

} // namespace

util::Result<Config> load_config(const fs::path& path, ConfigRequired required) {
  std::error_code ec;
  if (required == ConfigRequired::no && !fs::exists(path, ec)) {
    Config defaults;
    defaults.outputs.report = defaults.state_dir / "report.json";
    return defaults;
  }
  // The file decides which paths a root run writes, where the push token comes from and which
  // rules and workloads are trusted: one another user can change is refused (docs/service.md).
  NVTE_TRY_VOID(util::check_trusted_path(path, "config file"));
  std::string text = NVTE_TRY(util::read_file(path, 1u << 20));
  Config config = NVTE_TRY(parse_config(text, path));
  if (config.workloads_dir) NVTE_TRY_VOID(check_trusted_tree(*config.workloads_dir, "workloads_dir"));
  for (const auto& dir : config.rules_dirs) NVTE_TRY_VOID(check_trusted_tree(dir, "rules directory"));
  return config;
}

} // namespace service
