// The hardened input layer: each limit refuses with "ORIGIN:LINE: WHAT (limit N)", inputs just
// inside the limits pass, and the audit's pathological inputs are refused quickly (the sizes that
// crashed or hung the readers before the layer existed); "quickly" scales with the build's time
// factor (tests/support/build_factors.hpp.in).
#include "support/build_factors.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/yaml_load.hpp"
#include "util/yaml_tree.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using test_support::k_time_factor;

// Seconds since START, for the limits on the readers' work.
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string nested_json(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string message(const util::Result<void>& r) { return r ? std::string("ok") : r.error().message; }

std::string laughs(int levels) {
  std::string s = "a0: &a0 {k0: 1, k1: 1, k2: 1, k3: 1, k4: 1, k5: 1, k6: 1, k7: 1, k8: 1, k9: 1}\n";
  for (int l = 1; l <= levels; ++l) {
    s += "a" + std::to_string(l) + ": &a" + std::to_string(l) + " {";
    for (int i = 0; i < 10; ++i) s += (i ? ", k" : "k") + std::to_string(i) + ": *a" + std::to_string(l - 1);
    s += "}\n";
  }
  return s;
}

} // namespace

TEST(InputGuard, JsonDepthIsLimitedWithTheLine) {
  EXPECT_TRUE(util::check_json(nested_json(64), "f.json"));
  EXPECT_EQ(message(util::check_json("{\n\"a\":\n" + nested_json(65) + "}", "f.json")),
            "f.json:3: nested deeper than 64 levels (limit 64)");
  util::InputLimits shallow;
  shallow.max_depth = 2;
  EXPECT_EQ(message(util::check_json("{\"a\": {\"b\": {}}}", "x", shallow)), "x:1: nested deeper than 2 levels (limit 2)");
}

TEST(InputGuard, JsonBracketsInsideStringsAreText) {
  std::string s = "{\"a\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  EXPECT_TRUE(util::check_json(s, "f.json")) << message(util::check_json(s, "f.json"));
}

TEST(InputGuard, JsonValueCountIsLimited) {
  util::InputLimits small;
  small.max_nodes = 3;
  EXPECT_TRUE(util::check_json("[1,2]", "x", small));
  EXPECT_EQ(message(util::check_json("[1,2,3,4]", "x", small)), "x:1: more than 3 values (limit 3)");
}

TEST(InputGuard, TheAuditsDeepJsonIsRefusedFastAndNeverParsed) {
  // 100,000 levels crashed fleet inside nlohmann's parse (audit L3).
  auto start = std::chrono::steady_clock::now();
  auto parsed = util::parse_json<nlohmann::ordered_json>(nested_json(100000), "a.json");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "a.json:1: nested deeper than 64 levels (limit 64)");
  EXPECT_LT(seconds_since(start), 1 * k_time_factor);
}

TEST(InputGuard, ParseJsonNamesTheLineOfASyntaxError) {
  auto parsed = util::parse_json<nlohmann::json>("{\n\"a\": 1,\n}", "f.json");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message.rfind("f.json:3: not valid JSON: ", 0), 0u) << parsed.error().message;
  auto big = util::parse_json<nlohmann::json>("[1e999]", "f.json"); // out_of_range 406, not parse_error
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("f.json"), std::string::npos);
  auto fine = util::parse_json<nlohmann::json>("{\"a\": [1, 2]}", "f.json");
  ASSERT_TRUE(fine);
  EXPECT_EQ((*fine)["a"][1], 2);
}

TEST(InputGuard, YamlDepthIsLimitedBlockAndFlow) {
  EXPECT_TRUE(util::check_yaml("a: " + nested_json(63) + "\n", "f.yaml")); // the mapping is level 1
  EXPECT_EQ(message(util::check_yaml("name: x\nv: " + nested_json(64) + "\n", "f.yaml")),
            "f.yaml:2: nested deeper than 64 levels (limit 64)");
  std::string block;
  for (int i = 0; i < 70; ++i) block += std::string(static_cast<std::size_t>(i) * 2, ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_EQ(message(util::check_yaml(block, "b.yaml")), "b.yaml:65: nested deeper than 64 levels (limit 64)");
}

TEST(InputGuard, YamlFlowNestingOfTheAuditIsRefusedBeforeLibyamlSlowsDown) {
  // 200,000 levels ran past 60 s in the rules loader (audit R11): libyaml's scanner is quadratic
  // in the flow depth, so the refusal must come from the event stream, early.
  auto start = std::chrono::steady_clock::now();
  util::YamlError error;
  EXPECT_FALSE(util::YamlDocument::parse("rules: " + nested_json(200000) + "\n", error));
  EXPECT_TRUE(error.limit);
  EXPECT_EQ(error.message, "nested deeper than 64 levels (limit 64)");
  EXPECT_LT(seconds_since(start), 2 * k_time_factor);
}

TEST(InputGuard, YamlAliasCycleIsRefused) {
  std::string cycle = "model: &m\n  num_layers: 32\n  self: *m\n";
  EXPECT_EQ(message(util::check_yaml(cycle, "c.yaml")), "c.yaml:3: alias *m inside the node it names, a cycle (limit: none)");
  // An alias after its anchor's node has ended is an ordinary shared node.
  EXPECT_TRUE(util::check_yaml("base: &b {x: 1}\nmodel: {a: *b, c: *b}\n", "ok.yaml"));
}

TEST(InputGuard, YamlBillionLaughsStopsAtTheNodeBudget) {
  util::InputLimits limits;
  limits.max_nodes = 100000;
  auto start = std::chrono::steady_clock::now();
  auto r = util::check_yaml(laughs(8), "laughs.yaml", limits); // 10^9 nodes expanded, 892 bytes
  EXPECT_EQ(message(r), "laughs.yaml:5: more than 100000 nodes with aliases expanded (limit 100000)");
  EXPECT_LT(seconds_since(start), 1 * k_time_factor);
  EXPECT_TRUE(util::check_yaml(laughs(3), "small.yaml", limits)); // 24,684 nodes expanded
}

TEST(InputGuard, YamlCppTreeIsHeldToTheLimitsAsYamlCppReadsIt) {
  // Found by the fuzz campaign of 2026-11-29 (megatron, a stack overflow): for libyaml a lone
  // carriage return ends a line, so *m comes after &m's node has closed and check_yaml passes it;
  // yaml-cpp reads "b\r\rself" as one key inside &m's node, and builds a cycle.
  std::string cr = "model: &m\n  a  b\r\rself: *m\n";
  EXPECT_TRUE(util::check_yaml(cr, "cr.yaml"));
  auto loaded = util::load_yaml(cr, "cr.yaml");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message, "cr.yaml:1: an alias inside the node it names, a cycle, as yaml-cpp reads the text (limit: none)");
  // The node budget and the depth on yaml-cpp's own tree.
  util::InputLimits small;
  small.max_nodes = 100;
  EXPECT_EQ(message(util::check_yaml_cpp_tree(YAML::Load(laughs(2)), "l.yaml", small)),
            "l.yaml:1: more than 100 nodes with aliases expanded (limit 100)"); // an alias has its anchor's mark
  small.max_nodes = 1000000;
  small.max_depth = 3;
  EXPECT_EQ(message(util::check_yaml_cpp_tree(YAML::Load("a: [[[1]]]\n"), "d.yaml", small)),
            "d.yaml:1: nested deeper than 3 levels (limit 3)");
  // Inside the limits, aliases shared after their anchors' nodes are ordinary trees.
  auto ok = util::load_yaml("base: &b {x: 1}\nmodel: {a: *b, c: *b}\n", "ok.yaml");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ((*ok)["model"]["c"]["x"].as<int>(), 1);
  EXPECT_TRUE(util::check_yaml_cpp_tree(YAML::Load(laughs(2)), "l.yaml"));
}

TEST(InputGuard, YamlSecondDocumentIsRefused) {
  EXPECT_EQ(message(util::check_yaml("rules: []\n---\nrules: [1]\n", "r.yaml")),
            "r.yaml:2: a second YAML document, which would be ignored (limit 1)");
  EXPECT_TRUE(util::check_yaml("---\nrules: []\n...\n", "one.yaml"));
}

TEST(InputGuard, MalformedYamlIsRefusedWithItsLine) {
  EXPECT_EQ(message(util::check_yaml("a: [1\nb: 2\n", "m.yaml")).rfind("m.yaml:", 0), 0u);
  EXPECT_NE(message(util::check_yaml("a: [1\nb: 2\n", "m.yaml")).find("malformed YAML"), std::string::npos);
}

TEST(InputGuard, ReadInputCapsTheSize) {
  util::InputLimits tiny;
  tiny.max_bytes = 4;
  auto r = util::read_input("/proc/self/cmdline", tiny);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("(limit 4)"), std::string::npos) << r.error().message;
}

namespace {

// The lines read_lines hands over, or its error.
std::string lines_of(const std::filesystem::path& path, const util::LineLimits& limits) {
  std::string out;
  auto read = util::read_lines(
      path,
      [&](std::string_view line) -> util::Result<void> {
        out += "[" + std::string(line) + "]";
        return {};
      },
      limits);
  return read ? out : read.error().message;
}

std::filesystem::path scratch_file(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("nvte-read-lines-" + std::to_string(::getpid()) + "-" + name);
  EXPECT_TRUE(util::write_file_atomic(path, text).ok());
  return path;
}

} // namespace

TEST(InputGuard, ReadLinesHandsOverEveryLineOnce) {
  // Lines across the reader's 64 KiB chunks, an empty one, a carriage return kept, a last line
  // without its newline.
  std::string long_line(100000, 'x');
  auto path = scratch_file("lines", "a\n\n" + long_line + "\nb\r\nlast");
  std::string out = lines_of(path, {});
  EXPECT_EQ(out, "[a][][" + long_line + "][b\r][last]");
  std::filesystem::remove(path);
}

TEST(InputGuard, ReadLinesHoldsAFileAndStandardInputToTheSameLimits) {
  // Audit 2026-12-01 item 12: --te-log read a file up to 1 GiB and standard input without a
  // limit (std::bad_alloc on /dev/zero or a pipe of zeros).
  util::LineLimits small{100, 10};
  auto path = scratch_file("limits", "0123456789\n0123456789\n");
  EXPECT_EQ(lines_of(path, small), "[0123456789][0123456789]"); // at the limits: read
  std::filesystem::remove(path);
  path = scratch_file("long", "ok\n0123456789A\n");
  EXPECT_EQ(lines_of(path, small), path.string() + ":2: a line larger than 10 bytes (limit 10)");
  std::filesystem::remove(path);
  path = scratch_file("large", std::string(60, '\n') + std::string(60, '\n'));
  EXPECT_EQ(lines_of(path, small), path.string() + ": larger than 100 bytes (limit 100)");
  std::filesystem::remove(path);
  // /dev/zero: one endless line, refused at the line limit, in a moment. The moment is CPU time
  // (0.2 s here): on a machine shared with other builds the wall time is mostly waiting for a
  // core (2.6-3.4 s at load 23), while reading without the limit, or quadratically, costs CPU.
  auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  EXPECT_EQ(lines_of("/dev/zero", {}), "/dev/zero:1: a line larger than 16777216 bytes (limit 16777216)");
  EXPECT_LT(static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC, 2 * k_time_factor);
  EXPECT_LT(seconds_since(start), 60 * k_time_factor); // and it ends
  EXPECT_NE(lines_of("/", {}).find("/: not a regular file (a directory)"), std::string::npos);
  EXPECT_NE(lines_of("/nonexistent/x.log", {}).find("cannot open /nonexistent/x.log"), std::string::npos);
}

TEST(InputGuard, ReadLinesReadsAFifoAndStopsAtTheFirstError) {
  auto fifo = std::filesystem::temp_directory_path() / ("nvte-read-lines-fifo-" + std::to_string(::getpid()));
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "one\ntwo\nthree\n"; });
  std::vector<std::string> seen;
  auto read = util::read_lines(fifo, [&](std::string_view line) -> util::Result<void> {
    seen.emplace_back(line);
    if (line == "two") return util::Error{util::ErrorKind::invalid, "x.log:2: stop"};
    return {};
  });
  writer.join();
  std::filesystem::remove(fifo);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, "x.log:2: stop");
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two"}));
}
