// The Kubernetes packaging is a Kustomize tree (packaging/integrations/kubernetes: base, npd,
// overlays), written for Kustomize v2.0.3 (Debian 12's kubernetes-client, kubectl 1.20, which
// scripts/bootstrap.sh installs where no kubectl is) and rendering the same with v5. Every
// overlay is rendered here with the `kubectl kustomize` on PATH, as an operator
// would apply it, and the rendered objects are checked: each has an apiVersion its kind lives
// in, a name and the fields the API server requires; the images are retagged as the
// kustomizations promise (nvte-doctor:<project version>); monitors select the DaemonSet's pods
// on a port that exists; the preflight Job copies the bundle in an init container and runs it
// first in the job's image with a termination message. `kubectl apply --dry-run=client` would
// need a cluster's API discovery, so the schema checks are these. Skipped without kubectl.
// Kustomize v5's deprecation notes (for bases, patchesStrategicMerge, vars) are YAML comments.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

const std::filesystem::path k_kubernetes = std::filesystem::path(NVTE_SOURCE_DIR) / "packaging" / "integrations" / "kubernetes";

struct Rendered {
  int status = -1;
  std::string text;
};

// `kubectl kustomize DIR` (stderr folded in, so a failure shows kustomize's reason).
Rendered render(const std::filesystem::path& dir) {
  Rendered out;
  std::string command = "kubectl kustomize '" + dir.string() + "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return out;
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) out.text.append(buffer.data(), n);
  int raw = ::pclose(pipe.release());
  out.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

bool have_kubectl() { return std::system("kubectl version --client >/dev/null 2>&1") == 0; }

// The API group/version each kind the tree uses lives in.
const std::map<std::string, std::string> k_api_versions = {{"Namespace", "v1"},
                                                           {"ConfigMap", "v1"},
                                                           {"Service", "v1"},
                                                           {"DaemonSet", "apps/v1"},
                                                           {"Job", "batch/v1"},
                                                           {"PodMonitor", "monitoring.coreos.com/v1"},
                                                           {"ServiceMonitor", "monitoring.coreos.com/v1"}};

std::vector<YAML::Node> objects_of(const std::string& text) {
  std::vector<YAML::Node> out;
  for (auto& doc : YAML::LoadAll(text))
    if (doc.IsMap()) out.push_back(doc);
  return out;
}

std::vector<YAML::Node> of_kind(const std::vector<YAML::Node>& objects, const std::string& kind) {
  std::vector<YAML::Node> out;
  for (const auto& o : objects)
    if (o["kind"].as<std::string>() == kind) out.push_back(o);
  return out;
}

std::string project_version() {
  std::FILE* f = std::fopen((std::filesystem::path(NVTE_SOURCE_DIR) / "CMakeLists.txt").c_str(), "r");
  if (!f) return {};
  std::string text(1u << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  auto at = text.find("project(nvte-doctor VERSION ");
  if (at == std::string::npos) return {};
  at += std::string("project(nvte-doctor VERSION ").size();
  return text.substr(at, text.find(' ', at) - at);
}

// What the API server would refuse in a pod template: containers without a name or image,
// volume mounts of undeclared volumes, duplicate names.
void check_pod(const YAML::Node& pod, const std::string& where) {
  std::set<std::string> volumes;
  for (const auto& v : pod["volumes"]) EXPECT_TRUE(volumes.insert(v["name"].as<std::string>()).second) << where << ": duplicate volume";
  ASSERT_TRUE(pod["containers"] && pod["containers"].size() > 0) << where << ": no containers";
  std::set<std::string> names;
  for (const char* list : {"initContainers", "containers"}) {
    for (const auto& c : pod[list]) {
      ASSERT_TRUE(c["name"] && c["image"]) << where << ": a container without name or image";
      EXPECT_TRUE(names.insert(c["name"].as<std::string>()).second) << where << ": duplicate container " << c["name"];
      for (const auto& m : c["volumeMounts"])
        EXPECT_TRUE(volumes.count(m["name"].as<std::string>())) << where << ": mount of undeclared volume " << m["name"];
    }
  }
}

void check_objects(const std::vector<YAML::Node>& objects, const std::string& where) {
  ASSERT_FALSE(objects.empty()) << where << ": rendered nothing";
  for (const auto& o : objects) {
    ASSERT_TRUE(o["kind"] && o["apiVersion"] && o["metadata"]["name"]) << where << ": an object without kind, apiVersion or name";
    auto kind = o["kind"].as<std::string>();
    ASSERT_TRUE(k_api_versions.count(kind)) << where << ": unexpected kind " << kind;
    EXPECT_EQ(o["apiVersion"].as<std::string>(), k_api_versions.at(kind)) << where << ": " << kind;
    if (kind == "DaemonSet" || kind == "Job") {
      auto name = where + " " + kind + "/" + o["metadata"]["name"].as<std::string>();
      check_pod(o["spec"]["template"]["spec"], name);
      if (kind == "DaemonSet") {
        for (const auto& kv : o["spec"]["selector"]["matchLabels"])
          EXPECT_EQ(o["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>())
              << name << ": the selector does not select the template";
      }
    }
  }
}

std::vector<std::string> kustomizations() {
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(k_kubernetes)) {
    if (entry.path().filename() != "kustomization.yaml") continue;
    auto dir = entry.path().parent_path();
    dirs.push_back(std::filesystem::relative(dir, k_kubernetes).string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

class Kustomize : public ::testing::Test {
protected:
  void SetUp() override {
    if (!have_kubectl()) GTEST_SKIP() << "kubectl not installed (Debian's kubernetes-client; scripts/bootstrap.sh installs it)";
  }
  std::vector<YAML::Node> rendered(const std::string& dir) {
    auto out = render(k_kubernetes / dir);
    EXPECT_EQ(out.status, 0) << dir << ": " << out.text;
    return out.status == 0 ? objects_of(out.text) : std::vector<YAML::Node>{};
  }
};

TEST_F(Kustomize, EveryKustomizationRendersValidObjects) {
  auto dirs = kustomizations();
  for (const char* expected :
       {"base", "npd", "overlays/host", "overlays/metrics", "overlays/prometheus", "overlays/prometheus-servicemonitor",
        "overlays/preflight"})
    EXPECT_NE(std::find(dirs.begin(), dirs.end(), expected), dirs.end()) << expected;
  for (const auto& dir : dirs) {
    SCOPED_TRACE(dir);
    check_objects(rendered(dir), dir);
  }
}

TEST_F(Kustomize, ImagesAreRetaggedToTheProjectVersion) {
  const auto version = project_version();
  ASSERT_FALSE(version.empty());
  auto base = of_kind(rendered("base"), "DaemonSet");
  ASSERT_EQ(base.size(), 1u);
  EXPECT_EQ(base[0]["spec"]["template"]["spec"]["containers"][0]["image"].as<std::string>(), "nvte-doctor:" + version);
  for (const char* overlay : {"overlays/host", "overlays/metrics", "overlays/prometheus", "overlays/prometheus-servicemonitor"}) {
    auto ds = of_kind(rendered(overlay), "DaemonSet");
    ASSERT_EQ(ds.size(), 1u) << overlay;
    bool doctor = false;
    for (const auto& c : ds[0]["spec"]["template"]["spec"]["containers"]) {
      auto image = c["image"].as<std::string>();
      EXPECT_EQ(image.find(':'), image.rfind(':')) << overlay << ": " << image;
      if (c["name"].as<std::string>() == "nvte-doctor") {
        doctor = true;
        EXPECT_EQ(image, "registry.example.com/nvte-doctor:" + version) << overlay;
      }
    }
    EXPECT_TRUE(doctor) << overlay;
  }
}

TEST_F(Kustomize, HostOverlayCarriesTheNpdPluginAndNfdOutput) {
  auto objects = rendered("overlays/host");
  bool npd = false, config = false;
  for (const auto& cm : of_kind(objects, "ConfigMap")) {
    if (cm["metadata"]["name"].as<std::string>() == "npd-nvte-doctor") {
      npd = true;
      EXPECT_EQ(cm["metadata"]["namespace"].as<std::string>(), "kube-system");
    }
    if (cm["metadata"]["name"].as<std::string>() == "nvte-doctor-config") {
      config = true;
      auto conf = YAML::Load(cm["data"]["config.yaml"].as<std::string>());
      EXPECT_EQ(conf["outputs"]["nfd"].as<std::string>(), "/etc/kubernetes/node-feature-discovery/features.d/nvte-doctor");
      EXPECT_EQ(conf["outputs"]["prometheus"].as<std::string>(), "/var/lib/nvte-doctor/nvte_doctor.prom");
    }
  }
  EXPECT_TRUE(npd);
  EXPECT_TRUE(config);
}

// A monitor must select the DaemonSet's pods, on a port a container of theirs declares.
TEST_F(Kustomize, MonitorsSelectTheDoctorsMetricsPort) {
  for (const char* overlay : {"overlays/prometheus", "overlays/prometheus-servicemonitor"}) {
    SCOPED_TRACE(overlay);
    auto objects = rendered(overlay);
    auto ds = of_kind(objects, "DaemonSet");
    ASSERT_EQ(ds.size(), 1u);
    auto labels = ds[0]["spec"]["template"]["metadata"]["labels"];
    auto pod = ds[0]["spec"]["template"]["spec"];
    std::set<std::string> ports;
    std::string textfile_dir;
    for (const auto& c : pod["containers"]) {
      for (const auto& p : c["ports"]) ports.insert(p["name"].as<std::string>());
      for (const auto& a : c["args"])
        if (a.as<std::string>().rfind("--collector.textfile.directory=", 0) == 0) textfile_dir = a.as<std::string>().substr(31);
    }
    EXPECT_EQ(textfile_dir, "/var/lib/nvte-doctor") << "the sidecar must read where the doctor writes its textfile";
    auto selects = [&](const YAML::Node& match) {
      for (const auto& kv : match)
        if (!labels[kv.first.as<std::string>()] || labels[kv.first.as<std::string>()].as<std::string>() != kv.second.as<std::string>())
          return false;
      return match.size() > 0;
    };
    auto pod_monitors = of_kind(objects, "PodMonitor");
    auto service_monitors = of_kind(objects, "ServiceMonitor");
    ASSERT_EQ(pod_monitors.size() + service_monitors.size(), 1u);
    if (!pod_monitors.empty()) {
      EXPECT_TRUE(selects(pod_monitors[0]["spec"]["selector"]["matchLabels"]));
      EXPECT_TRUE(ports.count(pod_monitors[0]["spec"]["podMetricsEndpoints"][0]["port"].as<std::string>()));
    } else {
      auto services = of_kind(objects, "Service");
      ASSERT_EQ(services.size(), 1u);
      EXPECT_TRUE(selects(services[0]["spec"]["selector"]));
      auto service_port = services[0]["spec"]["ports"][0];
      EXPECT_TRUE(ports.count(service_port["targetPort"].as<std::string>()));
      EXPECT_EQ(service_monitors[0]["spec"]["endpoints"][0]["port"].as<std::string>(), service_port["name"].as<std::string>());
      for (const auto& kv : service_monitors[0]["spec"]["selector"]["matchLabels"])
        EXPECT_EQ(services[0]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
    }
  }
}

TEST_F(Kustomize, PreflightJobRunsTheBundleFirstInTheJobsImage) {
  auto jobs = of_kind(rendered("overlays/preflight"), "Job");
  ASSERT_EQ(jobs.size(), 1u);
  auto pod = jobs[0]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  std::string shared;
  for (const auto& v : pod["volumes"])
    if (v["emptyDir"]) shared = v["name"].as<std::string>();
  ASSERT_FALSE(shared.empty()) << "the bundle travels through an emptyDir";
  ASSERT_EQ(pod["initContainers"].size(), 1u);
  auto init = pod["initContainers"][0];
  EXPECT_EQ(init["image"].as<std::string>(), "registry.example.com/nvte-doctor:" + project_version());
  std::string copy;
  for (const auto& w : init["command"]) copy += w.as<std::string>() + " ";
  EXPECT_NE(copy.find("/opt/nvte-doctor/."), std::string::npos) << copy;
  ASSERT_EQ(pod["containers"].size(), 1u);
  auto job = pod["containers"][0];
  std::vector<std::string> command;
  for (const auto& w : job["command"]) command.push_back(w.as<std::string>());
  ASSERT_FALSE(command.empty());
  EXPECT_EQ(command[0], "/nvte-doctor/bin/nvte-doctor-preflight");
  auto dashdash = std::find(command.begin(), command.end(), "--");
  ASSERT_NE(dashdash, command.end()) << "the job's own command follows --";
  EXPECT_NE(std::find(command.begin(), dashdash, "--node-root"), dashdash);
  EXPECT_EQ(job["terminationMessagePath"].as<std::string>(), "/dev/termination-log");
  std::string image_env;
  for (const auto& e : job["env"])
    if (e["name"].as<std::string>() == "JOB_IMAGE") image_env = e["value"].as<std::string>();
  EXPECT_EQ(image_env, job["image"].as<std::string>()) << "the report names the image the job runs";
  EXPECT_EQ(job["image"].as<std::string>(), jobs[0]["metadata"]["annotations"]["nvte-doctor-job-image"].as<std::string>())
      << "the job's image is the one its annotation names";
  EXPECT_EQ(job["image"].as<std::string>().find("$("), std::string::npos) << "kustomize substituted the image";
  bool mounted = false;
  for (const auto& m : job["volumeMounts"])
    mounted |= m["name"].as<std::string>() == shared && m["mountPath"].as<std::string>() == "/nvte-doctor";
  EXPECT_TRUE(mounted);
  EXPECT_TRUE(job["resources"]["limits"]["nvidia.com/gpu"]) << "the GPU the job gets is the one checked";
}

// Audit 2026-12-01 item 9: the pods get no more than the doctor needs. In every rendered pod: the
// runtime's seccomp profile and no service-account token. The doctor's containers (the DaemonSet's
// and the preflight's init copy) run as a fixed non-root uid with a read-only root filesystem, no
// privilege escalation and every capability dropped; an init step that hands the output
// directories to that uid keeps CAP_CHOWN alone. Host mounts are read-only except the doctor's two
// output directories; NVIDIA_VISIBLE_DEVICES=void unless the command asks for --deep. The
// preflight Job has no hostPath unless it reads the node's report (--node-facts), and then only
// that file, read-only.
bool is_true(const YAML::Node& n) { return n && n.as<bool>(); }

void expect_locked_down(const YAML::Node& c, const std::string& where) {
  auto sc = c["securityContext"];
  EXPECT_TRUE(is_true(sc["readOnlyRootFilesystem"])) << where;
  EXPECT_TRUE(sc["allowPrivilegeEscalation"] && !sc["allowPrivilegeEscalation"].as<bool>()) << where;
  ASSERT_TRUE(sc["capabilities"]["drop"] && sc["capabilities"]["drop"].size() == 1) << where;
  EXPECT_EQ(sc["capabilities"]["drop"][0].as<std::string>(), "ALL") << where;
}

TEST_F(Kustomize, PodsGetNoMoreThanTheDoctorNeeds) {
  for (const auto& dir : kustomizations()) {
    SCOPED_TRACE(dir);
    auto objects = rendered(dir);
    std::vector<YAML::Node> pods;
    for (const char* kind : {"DaemonSet", "Job"})
      for (const auto& o : of_kind(objects, kind)) pods.push_back(o);
    for (const auto& o : pods) {
      const std::string where = dir + " " + o["kind"].as<std::string>();
      auto pod = o["spec"]["template"]["spec"];
      EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(""), "RuntimeDefault") << where;
      ASSERT_TRUE(pod["automountServiceAccountToken"]) << where << ": the token is mounted";
      EXPECT_FALSE(pod["automountServiceAccountToken"].as<bool>()) << where;
      std::map<std::string, YAML::Node> host_paths;
      for (const auto& v : pod["volumes"])
        if (v["hostPath"]) host_paths[v["name"].as<std::string>()] = v["hostPath"];
      if (o["kind"].as<std::string>() == "DaemonSet") {
        EXPECT_TRUE(is_true(pod["securityContext"]["runAsNonRoot"])) << where;
        const auto uid = pod["securityContext"]["runAsUser"].as<int>(0);
        EXPECT_GT(uid, 0) << where << ": a fixed non-root uid";
        bool chowner = false;
        for (const auto& init : pod["initContainers"]) {
          expect_locked_down(init, where + " init " + init["name"].as<std::string>());
          auto add = init["securityContext"]["capabilities"]["add"];
          ASSERT_TRUE(add && add.size() == 1) << where;
          EXPECT_EQ(add[0].as<std::string>(), "CHOWN") << where;
          std::string command;
          for (const auto& w : init["command"]) command += w.as<std::string>() + " ";
          chowner |= command.find(std::to_string(uid) + ":" + std::to_string(uid) + " /var/lib/nvte-doctor") != std::string::npos &&
                     command.find(std::to_string(uid) + ":" + std::to_string(uid) + " /etc/kubernetes/node-feature-discovery/features.d") !=
                         std::string::npos;
        }
        EXPECT_TRUE(chowner) << where << ": an init step hands both output directories to uid " << uid;
        for (const auto& c : pod["containers"]) {
          const std::string cwhere = where + " container " + c["name"].as<std::string>();
          expect_locked_down(c, cwhere);
          auto uid_of = [&](const YAML::Node& n) { return n["securityContext"]["runAsUser"].as<int>(uid); };
          EXPECT_GT(uid_of(c), 0) << cwhere;
          for (const auto& m : c["volumeMounts"]) {
            auto name = m["name"].as<std::string>();
            if (!host_paths.count(name)) continue;
            auto path = host_paths[name]["path"].as<std::string>();
            bool output = path == "/var/lib/nvte-doctor" || path == "/etc/kubernetes/node-feature-discovery/features.d";
            if (!output || c["name"].as<std::string>() != "nvte-doctor")
              EXPECT_TRUE(is_true(m["readOnly"])) << cwhere << ": " << path << " must be mounted read-only";
          }
          if (c["name"].as<std::string>() != "nvte-doctor") continue;
          std::string command;
          for (const auto& w : c["command"]) command += w.as<std::string>() + " ";
          std::string devices;
          for (const auto& e : c["env"])
            if (e["name"].as<std::string>() == "NVIDIA_VISIBLE_DEVICES") devices = e["value"].as<std::string>();
          if (command.find("--deep") == std::string::npos) EXPECT_EQ(devices, "void") << cwhere << ": no GPU without --deep";
        }
      } else {
        for (const auto& init : pod["initContainers"]) {
          expect_locked_down(init, where + " init");
          EXPECT_TRUE(is_true(init["securityContext"]["runAsNonRoot"])) << where;
          EXPECT_GT(init["securityContext"]["runAsUser"].as<int>(0), 0) << where;
        }
        std::string command;
        for (const auto& c : pod["containers"])
          for (const auto& w : c["command"]) command += w.as<std::string>() + " ";
        if (command.find("--node-facts") == std::string::npos) {
          EXPECT_TRUE(host_paths.empty()) << where << ": a hostPath without --node-facts";
        } else {
          for (const auto& [name, hp] : host_paths) {
            EXPECT_EQ(hp["type"].as<std::string>(""), "File") << where << ": " << name;
            EXPECT_EQ(hp["path"].as<std::string>(""), "/var/lib/nvte-doctor/report.json") << where;
          }
          for (const auto& c : pod["containers"])
            for (const auto& m : c["volumeMounts"])
              if (host_paths.count(m["name"].as<std::string>())) EXPECT_TRUE(is_true(m["readOnly"])) << where << ": the report, read-only";
        }
      }
    }
  }
}

} // namespace
