// The environment of a container image read from outside (probe/image_env.hpp): an OCI runtime
// config, an OCI image config, umoci's bundle beside a rootfs, and the default.
#include "probe/image_env.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

class ImageEnv : public ::testing::Test {
protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("image-env-" + std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir / "rootfs");
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  }
};

TEST_F(ImageEnv, RuntimeConfigProcessEnv) {
  auto file = write("config.json", R"({"process": {"env": ["PATH=/opt/venv/bin:/usr/bin", "NVTE_FLASH_ATTN=0", "junk"]}})");
  auto env = probe::read_image_environment(file);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->env.at("PATH"), "/opt/venv/bin:/usr/bin");
  EXPECT_EQ(env->env.at("NVTE_FLASH_ATTN"), "0");
  EXPECT_EQ(env->env.size(), 2u) << "an entry without '=' is dropped, as a runtime drops it";
  EXPECT_EQ(env->source, file.string());
}

TEST_F(ImageEnv, ImageConfigEnv) {
  auto file = write("image.json", R"({"architecture": "amd64", "config": {"Env": ["LD_LIBRARY_PATH=/usr/local/nvidia/lib64"]}})");
  auto env = probe::read_image_environment(file);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->env.at("LD_LIBRARY_PATH"), "/usr/local/nvidia/lib64");
}

TEST_F(ImageEnv, NeitherIsAnErrorNamingTheFile) {
  auto file = write("other.json", R"({"Env": []})");
  auto env = probe::read_image_environment(file);
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().message.find(file.string()), std::string::npos) << env.error().message;
}

TEST_F(ImageEnv, UmociBundleBesideTheRootfs) {
  write("config.json", R"({"process": {"env": ["PATH=/bundle/bin"]}})");
  auto env = probe::image_environment(dir / "rootfs", std::nullopt);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->env.at("PATH"), "/bundle/bin");
  auto trailing = probe::image_environment(dir.string() + "/rootfs/", std::nullopt);
  ASSERT_TRUE(trailing);
  EXPECT_EQ(trailing->env.at("PATH"), "/bundle/bin");
}

TEST_F(ImageEnv, ExplicitConfigWinsAndDefaultIsPathOnly) {
  write("config.json", R"({"process": {"env": ["PATH=/bundle/bin"]}})");
  auto other = write("image.json", R"({"config": {"Env": ["PATH=/explicit"]}})");
  EXPECT_EQ(probe::image_environment(dir / "rootfs", other)->env.at("PATH"), "/explicit");
  fs::create_directories(dir / "tree");
  auto fallback = probe::image_environment(dir / "tree", std::nullopt);
  ASSERT_TRUE(fallback);
  EXPECT_EQ(fallback->source, "default");
  ASSERT_EQ(fallback->env.size(), 1u);
  EXPECT_EQ(fallback->env.at("PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
}

TEST_F(ImageEnv, BrokenBundleConfigIsAnErrorNotASilentDefault) {
  write("config.json", "{not json");
  EXPECT_FALSE(probe::image_environment(dir / "rootfs", std::nullopt));
}

} // namespace
