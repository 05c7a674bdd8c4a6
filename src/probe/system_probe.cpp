// system: what kind of host this is. Under a fake root (tests, a mounted node image) only the
// files under that root count; what only the running kernel can say (uname) is asked of it only
// when the root is "/". glibc's version is the running libc's there, and under another root the
// root's own libc.so.6, read as a file: the version in its name (libc-2.31.so, before glibc 2.34)
// or the banner every glibc embeds ("... release version 2.36."), never by running it.
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"

#include "util/file.hpp"
#include "util/strings.hpp"

#include <cctype>
#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace probe {

namespace {

bool is_real_root(const Host& host) { return host.root == "/" || host.root.empty(); }

std::optional<std::string> read_line(const Host& host, const char* path) {
  auto text = util::read_file(util::under_root(host.root, path), std::size_t{64} << 10);
  if (!text) return std::nullopt;
  auto line = util::trim(util::split(*text, '\n').front());
  if (line.empty()) return std::nullopt;
  return std::string(line);
}

// KEY=value or KEY="value" lines of os-release(5).
void read_os_release(const Host& host, model::Facts& facts) {
  auto text = util::read_file(util::under_root(host.root, "/etc/os-release"), std::size_t{64} << 10);
  if (!text) text = util::read_file(util::under_root(host.root, "/usr/lib/os-release"), std::size_t{64} << 10);
  if (!text) return;
  for (auto line : util::split(*text, '\n')) {
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = util::trim(line.substr(0, eq));
    auto value = util::trim(line.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    if (key == "ID") facts.set("system.os_id", std::string(value));
    else if (key == "VERSION_ID") facts.set("system.os_version", std::string(value));
    else if (key == "PRETTY_NAME") facts.set("system.os_name", std::string(value));
  }
}

// The glibc of the root's libc.so.6: the version in its real file's name, else the banner.
std::optional<model::Version> root_glibc_version(const Host& host) {
  const std::string dirs[] = {"/lib/" + multiarch_triplet(), "/usr/lib/" + multiarch_triplet(), "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  for (const auto& dir : dirs) {
    auto resolved = resolve_node_path(host.root, dir + "/libc.so.6");
    if (!resolved) continue;
    std::string name = resolved->real.filename().string();
    if (name.starts_with("libc-") && name.ends_with(".so"))
      if (auto v = model::Version::parse(std::string_view(name).substr(5, name.size() - 8))) return *v;
    // libc.so.6 is about 2 MB; its banner sits in .rodata.
    auto text = util::read_file(host_path(host.root, resolved->real), 16u << 20);
    if (!text) continue;
    constexpr std::string_view k_banner = "release version ";
    for (auto at = text->find(k_banner); at != std::string::npos; at = text->find(k_banner, at + 1)) {
      std::size_t begin = at + k_banner.size(), end = begin;
      while (end < text->size() && (std::isdigit(static_cast<unsigned char>((*text)[end])) || (*text)[end] == '.')) ++end;
      while (end > begin && (*text)[end - 1] == '.') --end;
      if (end > begin)
        if (auto v = model::Version::parse(std::string_view(*text).substr(begin, end - begin))) return *v;
    }
  }
  return std::nullopt;
}

bool exists_under(const Host& host, const char* path) {
  std::error_code ec;
  return std::filesystem::exists(util::under_root(host.root, path), ec);
}

std::string container_kind(const Host& host) {
  auto cgroup = util::read_file(util::under_root(host.root, "/proc/1/cgroup"), std::size_t{256} << 10).value_or("");
  if (!host.getenv("KUBERNETES_SERVICE_HOST").empty() || cgroup.find("kubepods") != std::string::npos) {
    return "kubernetes";
  }
  if (exists_under(host, "/.dockerenv") || cgroup.find("/docker") != std::string::npos) return "docker";
  if (exists_under(host, "/run/.containerenv") || cgroup.find("libpod") != std::string::npos) return "podman";
  if (cgroup.find("/lxc") != std::string::npos || host.getenv("container") == "lxc") return "lxc";
  return "none";
}

} // namespace

void run_system_probe(const Host& host, model::Facts& facts) {
  bool real = is_real_root(host);
  utsname uts{};
  bool have_uname = real && ::uname(&uts) == 0;

  if (real) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0 && name[0]) facts.set("system.hostname", std::string(name));
  } else if (auto name = read_line(host, "/etc/hostname")) {
    facts.set("system.hostname", *name);
  }
  read_os_release(host, facts);
  if (auto release = read_line(host, "/proc/sys/kernel/osrelease")) facts.set("system.kernel", *release);
  else if (have_uname) facts.set("system.kernel", std::string(uts.release));
  if (have_uname) facts.set("system.arch", std::string(uts.machine));
  facts.set("system.container", container_kind(host));
  if (real) {
    if (auto glibc = model::Version::parse(::gnu_get_libc_version())) facts.set("system.glibc_version", *glibc);
  } else if (auto glibc = root_glibc_version(host)) {
    facts.set("system.glibc_version", *glibc);
  }
  record_status(facts, "system", "ok");
}

} // namespace probe
