#include <gtest/gtest.h>

#include <string>

namespace {
const std::string k_rules = "rules";
int i(int value) { return value; }
std::string error_of(const std::string& json) { return json; }
class Import : public testing::Test {};
// Tests inside the anonymous namespace invoke TEST there: not a name of the file.
TEST(HfConfig, InsideTheNamespace) { EXPECT_EQ(i(2), 2); }
} // namespace

TEST(HfConfig, Imports) { EXPECT_EQ(i(1), 1); }
TEST_F(Import, Works) { EXPECT_EQ(error_of("x"), "x"); }
