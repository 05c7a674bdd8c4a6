#include <gtest/gtest.h>

#include <string>

namespace {
const std::string k_rules = "rules";
int i(int value) { return value; }
std::string error_of(const std::string& args, int line) { return args + std::to_string(line); }
// Tests inside the anonymous namespace invoke TEST there: not a name of the file.
TEST(Megatron, InsideTheNamespace) { EXPECT_EQ(i(2), 2); }
} // namespace

TEST(Megatron, Imports) { EXPECT_EQ(i(1), 1); }
TEST(Megatron, Errors) { EXPECT_EQ(error_of("x", 1), "x1"); }
