// service::Config: the shipped default file parses to the documented defaults; unknown keys and
// bad values are errors at file:line:column with hints.
#include "service/config.hpp"

#include "util/file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using testing::HasSubstr;
using namespace std::chrono_literals;

namespace {

TEST(Config, ShippedDefaultFileParses) {
  auto text = util::read_file(std::string(NVTE_SOURCE_DIR) + "/packaging/config.yaml");
  ASSERT_TRUE(text.ok());
  auto config = service::parse_config(*text, "/etc/nvte-doctor/config.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->state_dir, "/var/lib/nvte-doctor");
  EXPECT_EQ(config->interval, 900s);
  EXPECT_EQ(config->max_age, 86400s);
  EXPECT_EQ(config->outputs.report, "/var/lib/nvte-doctor/report.json");
  EXPECT_FALSE(config->outputs.prometheus);
  EXPECT_FALSE(config->push);
  EXPECT_EQ(config->selftest_policy, service::SelftestPolicy::on_change);
  EXPECT_EQ(config->selftest_timeout, 120s);
  EXPECT_EQ(config->debounce, 5000ms);
  // The built-in defaults agree with the documented file.
  service::Config defaults = *service::load_config("/nonexistent/config.yaml", service::ConfigRequired::no);
  EXPECT_EQ(defaults.state_dir, config->state_dir);
  EXPECT_EQ(defaults.interval, config->interval);
  EXPECT_EQ(defaults.max_age, config->max_age);
  EXPECT_EQ(defaults.outputs.report, config->outputs.report);
  EXPECT_EQ(defaults.selftest_policy, config->selftest_policy);
  EXPECT_EQ(defaults.selftest_timeout, config->selftest_timeout);
  EXPECT_EQ(defaults.debounce, config->debounce);
}

TEST(Config, EverySetting) {
  auto config = service::parse_config(R"(
workloads_dir: workloads
rules: [/usr/share/nvte-doctor/rules, local-rules]
state_dir: /srv/doctor
interval: 90
max_age: 2h
outputs:
  prometheus: /var/lib/node_exporter/nvte.prom
  nfd: /etc/kubernetes/node-feature-discovery/features.d/nvte-doctor
push:
  url: https://collector.example/reports/{host}.json
  method: PUT
  token_file: token
  connect_timeout: 2s
  timeout: 10s
  retries: 5
  backoff: 250ms
  spool_max_reports: 7
  spool_max_bytes: 2M
selftest:
  policy: always
  timeout: 30s
daemon:
  debounce: 1s
  watch: [/opt/models]
)",
                                      "/etc/nvte-doctor/config.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(*config->workloads_dir, "/etc/nvte-doctor/workloads");
  ASSERT_EQ(config->rules_dirs.size(), 2u);
  EXPECT_EQ(config->rules_dirs[1], "/etc/nvte-doctor/local-rules");
  EXPECT_EQ(config->interval, 90s);
  EXPECT_EQ(config->max_age, 7200s);
  EXPECT_EQ(config->outputs.report, "/srv/doctor/report.json");
  ASSERT_TRUE(config->push);
  EXPECT_EQ(config->push->url, "https://collector.example/reports/{host}.json");
  EXPECT_EQ(config->push->method, service::PushMethod::put);
  EXPECT_EQ(*config->push->token_file, "/etc/nvte-doctor/token");
  EXPECT_EQ(config->push->retries, 5);
  EXPECT_EQ(config->push->backoff, 250ms);
  EXPECT_EQ(config->push->spool_dir, "/srv/doctor/spool");
  EXPECT_EQ(config->push->spool_max_reports, 7u);
  EXPECT_EQ(config->push->spool_max_bytes, 2u << 20);
  EXPECT_EQ(config->selftest_policy, service::SelftestPolicy::always);
  EXPECT_EQ(config->watch.at(0), "/opt/models");
}

struct BadCase {
  const char* text;
  const char* expected; // substring of the error
};

TEST(Config, ErrorsPointAtTheSpot) {
  const BadCase cases[] = {
      {"intervall: 5m\n", "cfg.yaml:1:1: unknown key 'intervall' in the top level; did you mean 'interval'?"},
      {"outputs:\n  promethues: /x\n", "cfg.yaml:2:3: unknown key 'promethues' in outputs; did you mean 'prometheus'?"},
      {"push:\n  url: https://x\n  zzzzzz: 1\n", "cfg.yaml:3:3: unknown key 'zzzzzz' in push (known: "},
      {"interval: soon\n", "cfg.yaml:1:11: interval: 'soon' is not a duration"},
      {"selftest:\n  policy: sometimes\n", "cfg.yaml:2:11: selftest.policy: 'sometimes' is not one of never, on_change, always"},
      {"push:\n  retries: 3\n", "cfg.yaml:2:3: push needs a url"},
      {"push:\n  url: ftp://x\n", "push.url must start with https://"},
      {"push:\n  url: https://x\n  method: PATCH\n", "cfg.yaml:3:11: push.method must be POST or PUT, not 'PATCH'"},
      {"push:\n  url: https://x\n  retries: -1\n", "cfg.yaml:3:12: push.retries: '-1' is not a whole number from 0 to 20"},
      {"push:\n  url: https://x\n  spool_max_bytes: lots\n", "push.spool_max_bytes: 'lots'"},
      {"outputs: [a, b]\n", "cfg.yaml:1:10: outputs must be a mapping"},
      {"interval: [1\n", "cfg.yaml:"},
      {"- just\n- a list\n", "the top level must be a mapping"},
  };
  for (const auto& c : cases) {
    auto config = service::parse_config(c.text, "cfg.yaml");
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_THAT(config.error().message, HasSubstr(c.expected)) << c.text;
  }
}

TEST(Config, MissingFile) {
  auto required = service::load_config("/nonexistent/nvte.yaml", service::ConfigRequired::yes);
  ASSERT_FALSE(required.ok());
  EXPECT_THAT(required.error().message, HasSubstr("/nonexistent/nvte.yaml"));
  EXPECT_TRUE(service::load_config("/nonexistent/nvte.yaml", service::ConfigRequired::no).ok());
}

TEST(Config, DurationsAndSizes) {
  EXPECT_EQ(service::parse_duration("500ms"), 500ms);
  EXPECT_EQ(service::parse_duration("30"), 30s);
  EXPECT_EQ(service::parse_duration("15m"), 15min);
  EXPECT_EQ(service::parse_duration("1d"), 24h);
  EXPECT_FALSE(service::parse_duration("1w"));
  EXPECT_FALSE(service::parse_duration("m"));
  EXPECT_EQ(service::parse_size("64M"), 64u << 20);
  EXPECT_EQ(service::parse_size("512KiB"), 512u << 10);
  EXPECT_EQ(service::parse_size("100"), 100u);
  EXPECT_FALSE(service::parse_size("1T"));
}

} // namespace

TEST(Config, RulesUpdateKeysShareTheFile) {
  // `rules update` reads rules_update.public_keys from the same file `run` parses.
  auto config = service::parse_config("rules_update:\n  public_keys: [AAAA, BBBB]\n", "cfg.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->rules_update_public_keys, (std::vector<std::string>{"AAAA", "BBBB"}));
  auto wrong = service::parse_config("rules_update:\n  public_keys: AAAA\n", "cfg.yaml");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("cfg.yaml:2"), std::string::npos) << wrong.error().message;
}
