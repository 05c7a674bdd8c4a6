// The integration files under packaging/integrations are configuration other systems load
// (Kubernetes, node-problem-detector, Prometheus, Grafana), so a syntax slip only shows on a
// cluster. This test loads every YAML document with yaml-cpp and every JSON with nlohmann, then
// checks the contracts the files promise: the DaemonSet's read-only host mounts and writable
// NFD directory, the NPD plugin's path and timeouts, alert expressions that name only the
// doctor's metrics, and dashboard queries that do the same.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::filesystem::path k_integrations = std::filesystem::path(NVTE_SOURCE_DIR) / "packaging" / "integrations";

// The metric families src/report/prometheus.cpp writes (the service branch's textfile output).
const std::set<std::string> k_metrics = {"nvte_doctor_info",
                                         "nvte_doctor_status",
                                         "nvte_doctor_findings_by_severity",
                                         "nvte_doctor_findings",
                                         "nvte_doctor_attention_backend_available",
                                         "nvte_doctor_attention_backend_selected",
                                         "nvte_doctor_workload_runnable",
                                         "nvte_doctor_workload_verdict",
                                         "nvte_doctor_selftest_passed",
                                         "nvte_doctor_selftest_duration_seconds",
                                         "nvte_doctor_last_run_timestamp_seconds",
                                         "nvte_doctor_run_duration_seconds",
                                         "nvte_doctor_finding_impact",
                                         "nvte_doctor_knowledge_extrapolated"};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<YAML::Node> load_all(const std::filesystem::path& path) {
  try {
    return YAML::LoadAllFromFile(path.string());
  } catch (const YAML::Exception& e) {
    ADD_FAILURE() << path << ": " << e.what();
    return {};
  }
}

YAML::Node find_kind(const std::vector<YAML::Node>& docs, const std::string& kind) {
  for (const auto& doc : docs) {
    if (doc["kind"] && doc["kind"].as<std::string>() == kind) return doc;
  }
  return {};
}

// Every nvte_doctor_* name in a PromQL expression must be a metric the doctor writes.
void expect_known_metrics(const std::string& expr, const std::string& where) {
  static const std::regex metric(R"(nvte_doctor_[a-z_]+)");
  int found = 0;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric); it != std::sregex_iterator(); ++it) {
    ++found;
    EXPECT_TRUE(k_metrics.count(it->str())) << where << ": unknown metric " << it->str() << " in " << expr;
  }
  EXPECT_GT(found, 0) << where << ": expression names no nvte_doctor metric: " << expr;
}

TEST(PackagingIntegrations, EveryYamlFileParses) {
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(k_integrations)) {
    auto ext = entry.path().extension();
    if (ext != ".yaml" && ext != ".yml") continue;
    ++files;
    auto docs = load_all(entry.path());
    EXPECT_FALSE(docs.empty()) << entry.path();
    for (const auto& doc : docs) EXPECT_TRUE(doc.IsMap()) << entry.path() << ": a document is not a mapping";
  }
  EXPECT_GE(files, 3);
}

TEST(PackagingIntegrations, DaemonSetMountsTheHostReadOnlyAndWritesNfdFeatures) {
  auto docs = load_all(k_integrations / "kubernetes" / "base" / "daemonset.yaml");
  for (auto& doc : load_all(k_integrations / "kubernetes" / "base" / "config.yaml")) docs.push_back(doc);
  auto ds = find_kind(docs, "DaemonSet");
  ASSERT_TRUE(ds) << "no DaemonSet in base/daemonset.yaml";
  auto pod = ds["spec"]["template"]["spec"];
  std::map<std::string, std::string> host_paths; // volume name -> host path
  for (const auto& volume : pod["volumes"]) {
    if (volume["hostPath"]) host_paths[volume["name"].as<std::string>()] = volume["hostPath"]["path"].as<std::string>();
  }
  ASSERT_EQ(pod["containers"].size(), 1u);
  auto container = pod["containers"][0];
  std::map<std::string, std::pair<std::string, bool>> mounts; // host path -> (mount path, read-only)
  for (const auto& mount : container["volumeMounts"]) {
    auto name = mount["name"].as<std::string>();
    if (!host_paths.count(name)) continue;
    mounts[host_paths[name]] = {mount["mountPath"].as<std::string>(), mount["readOnly"] && mount["readOnly"].as<bool>()};
  }
  for (const char* path : {"/proc/driver/nvidia", "/usr/lib", "/usr/local", "/etc/os-release"}) {
    ASSERT_TRUE(mounts.count(path)) << path << " is not mounted";
    EXPECT_TRUE(mounts[path].second) << path << " must be read-only";
    EXPECT_EQ(mounts[path].first, std::string("/host") + path) << "the doctor examines the host under --root /host";
  }
  const std::string features = "/etc/kubernetes/node-feature-discovery/features.d";
  ASSERT_TRUE(mounts.count(features));
  EXPECT_FALSE(mounts[features].second) << "the NFD features directory must be writable";
  ASSERT_TRUE(mounts.count("/var/lib/nvte-doctor"));
  EXPECT_FALSE(mounts["/var/lib/nvte-doctor"].second);

  std::vector<std::string> command;
  for (const auto& word : container["command"]) command.push_back(word.as<std::string>());
  ASSERT_GE(command.size(), 4u);
  EXPECT_EQ(command[1], "daemon");
  EXPECT_NE(std::find(command.begin(), command.end(), "/host"), command.end());

  // Without --deep the doctor under --root /host needs no GPU device (audit 2026-12-01 item 9).
  bool no_gpus = false;
  for (const auto& env : container["env"]) {
    no_gpus |= env["name"].as<std::string>() == "NVIDIA_VISIBLE_DEVICES" && env["value"].as<std::string>() == "void";
  }
  EXPECT_EQ(std::find(command.begin(), command.end(), "--deep"), command.end());
  EXPECT_TRUE(no_gpus) << "no GPU is mapped into a pod that starts no CUDA: NVIDIA_VISIBLE_DEVICES=void";
  EXPECT_FALSE(container["resources"]["limits"]["nvidia.com/gpu"]) << "the doctor must not take a GPU from the scheduler";

  // The ConfigMap's config.yaml is YAML and writes the NFD file into the mounted directory.
  auto config_map = find_kind(docs, "ConfigMap");
  ASSERT_TRUE(config_map);
  auto config = YAML::Load(config_map["data"]["config.yaml"].as<std::string>());
  auto nfd = config["outputs"]["nfd"].as<std::string>();
  EXPECT_EQ(nfd.rfind(features + "/", 0), 0u) << nfd;
  EXPECT_EQ(config["outputs"]["report"].as<std::string>(), "/var/lib/nvte-doctor/report.json");
}

TEST(PackagingIntegrations, NodeProblemDetectorPluginConfig) {
  auto docs = load_all(k_integrations / "kubernetes" / "npd" / "npd-custom-plugin.yaml");
  auto config_map = find_kind(docs, "ConfigMap");
  ASSERT_TRUE(config_map);
  auto text = config_map["data"]["nvte-doctor.json"].as<std::string>();
  auto plugin = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(plugin.is_discarded()) << "the embedded NPD config is not JSON";
  EXPECT_EQ(plugin["plugin"], "custom");
  // Two scopes, two conditions: the node's health and its workloads' verdicts (--workloads).
  ASSERT_EQ(plugin["rules"].size(), 2u);
  ASSERT_EQ(plugin["conditions"].size(), 2u);
  auto seconds = [](const std::string& d) { return std::stoi(d.substr(0, d.size() - 1)) * (d.back() == 'm' ? 60 : 1); };
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& rule = plugin["rules"][i];
    EXPECT_EQ(rule["path"], "/usr/libexec/nvte-doctor/npd-check");
    EXPECT_EQ(rule["type"], "permanent");
    EXPECT_EQ(rule["condition"], plugin["conditions"][i]["type"]);
    EXPECT_LE(seconds(rule["timeout"]), seconds(plugin["pluginConfig"]["timeout"]));
  }
  EXPECT_TRUE(std::filesystem::exists(k_integrations / "kubernetes" / "npd-check"));
  EXPECT_EQ(plugin["conditions"][0]["type"], "TransformerEngineProblem");
  EXPECT_EQ(plugin["conditions"][1]["type"], "TransformerEngineWorkloadProblem");
  const auto& args = plugin["rules"][1]["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--workloads"), args.end()) << args.dump();
}

TEST(PackagingIntegrations, PrometheusRulesUseTheDoctorsMetrics) {
  auto docs = load_all(k_integrations / "prometheus" / "nvte-doctor.rules.yml");
  ASSERT_EQ(docs.size(), 1u);
  int alerts = 0, records = 0;
  for (const auto& group : docs[0]["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (rule["record"]) {
        // Recording rules (the fleet view in Grafana) are named nvte_doctor:...: and read only
        // the doctor's own metrics.
        ++records;
        auto name = rule["record"].as<std::string>();
        EXPECT_EQ(name.rfind("nvte_doctor:", 0), 0u) << name;
        expect_known_metrics(rule["expr"].as<std::string>(), name);
        continue;
      }
      ++alerts;
      auto name = rule["alert"].as<std::string>();
      expect_known_metrics(rule["expr"].as<std::string>(), name);
      EXPECT_TRUE(rule["labels"]["severity"]) << name;
      EXPECT_TRUE(rule["annotations"]["summary"]) << name;
    }
  }
  EXPECT_GE(alerts, 4);
  EXPECT_GE(records, 4);
}

TEST(PackagingIntegrations, GrafanaDashboardIsJsonAndQueriesTheDoctorsMetrics) {
  auto dashboard = nlohmann::json::parse(slurp(k_integrations / "grafana" / "nvte-doctor-dashboard.json"), nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "the Grafana dashboard is not JSON";
  ASSERT_TRUE(dashboard["panels"].is_array());
  EXPECT_FALSE(dashboard.contains("__inputs")) << "file provisioning does not fill in __inputs";
  // The panels read the shipped recording rules (nvte_doctor:...), or doctor metrics in an
  // aggregation; tests/packaging/grafana_dashboard_test.py renders each with promtool.
  std::set<std::string> recorded;
  for (const auto& group : load_all(k_integrations / "prometheus" / "nvte-doctor.rules.yml")[0]["groups"])
    for (const auto& rule : group["rules"])
      if (rule["record"]) recorded.insert(rule["record"].as<std::string>());
  static const std::regex record(R"(nvte_doctor:[a-z_:]+)");
  std::set<int> ids;
  int queries = 0, on_rules = 0;
  for (const auto& panel : dashboard["panels"]) {
    EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "duplicate panel id " << panel["id"];
    for (const auto& target : panel["targets"]) {
      ++queries;
      auto expr = target["expr"].get<std::string>();
      bool uses_rule = false;
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), record); it != std::sregex_iterator(); ++it) {
        uses_rule = true;
        EXPECT_TRUE(recorded.count(it->str())) << panel["title"] << ": " << it->str() << " is not a shipped recording rule";
      }
      if (uses_rule) ++on_rules;
      else expect_known_metrics(expr, panel["title"].get<std::string>());
    }
  }
  EXPECT_GE(queries, 5);
  EXPECT_GE(on_rules, queries - 1) << "the dashboard should read the recording rules, not per-node series";
}

} // namespace
