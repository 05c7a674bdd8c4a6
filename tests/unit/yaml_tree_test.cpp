// The libyaml tree of the rules loader: the yaml-cpp behaviours the loader relies on (null
// scalars, quoted strings, marks, mapping entries in order, aliases) and errors with a position.
#include "rules/yaml_tree.hpp"

#include <gtest/gtest.h>

using rules::detail::YamlDocument;
using rules::detail::YamlError;

TEST(YamlTree, MappingsSequencesScalarsAndNulls) {
  YamlError error;
  auto doc = YamlDocument::parse("rules:\n  - id: a\n    when: '~'\n    x: ~\n    y:\n    z: null\n  - [1, \"null\"]\n", error);
  ASSERT_TRUE(doc) << error.message;
  auto root = doc->root();
  ASSERT_TRUE(root.IsMap());
  ASSERT_EQ(root.size(), 1u);
  const auto& rules = root.begin()->second;
  EXPECT_EQ(root.begin()->first.Scalar(), "rules");
  ASSERT_TRUE(rules.IsSequence());
  ASSERT_EQ(rules.size(), 2u);
  const auto& rule = *rules.begin();
  ASSERT_TRUE(rule.IsMap());
  std::vector<std::string> keys;
  for (const auto& entry : rule) keys.push_back(entry.first.Scalar());
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "when", "x", "y", "z"}));
  auto it = rule.begin();
  EXPECT_EQ(it->second.Scalar(), "a");
  EXPECT_EQ(it->second.Mark().line, 1);
  EXPECT_EQ(it->second.Mark().column, 8);
  ++it;
  EXPECT_TRUE(it->second.IsScalar()); // quoted: a string, not null
  EXPECT_EQ(it->second.Scalar(), "~");
  for (++it; it != rule.end(); ++it) EXPECT_TRUE(it->second.IsNull()) << it->first.Scalar();
  const auto& flow = *(rules.begin() + 1);
  ASSERT_TRUE(flow.IsSequence());
  EXPECT_EQ((flow.begin() + 1)->Scalar(), "null");
  EXPECT_EQ(rule.Scalar(), ""); // not a scalar: empty, as yaml-cpp
}

TEST(YamlTree, BlockScalarsKeepTheirTextAndAliasesShareTheAnchor) {
  YamlError error;
  auto doc = YamlDocument::parse("a: &x\n  k: |\n    line one\n    line two\nb: *x\n", error);
  ASSERT_TRUE(doc) << error.message;
  auto a = doc->root().begin()->second;
  auto b = (doc->root().begin() + 1)->second;
  EXPECT_EQ(a.begin()->second.Scalar(), "line one\nline two\n");
  EXPECT_EQ(a.begin()->second.Mark().line, 1);
  EXPECT_EQ(a.begin()->second.Mark().column, 5); // at the '|', where the loader expects it
  ASSERT_TRUE(b.IsMap());
  EXPECT_EQ(b.begin()->second.Scalar(), "line one\nline two\n");
}

TEST(YamlTree, EmptyTextIsANullRootAndBadYamlHasAPosition) {
  YamlError error;
  auto empty = YamlDocument::parse("# only a comment\n", error);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->root().IsNull());
  auto bad = YamlDocument::parse("rules:\n  - id: a\n   title: [unclosed\n", error);
  EXPECT_FALSE(bad);
  EXPECT_FALSE(error.message.empty());
  EXPECT_GE(error.mark.line, 1);
  auto alias = YamlDocument::parse("a: *nowhere\n", error);
  EXPECT_FALSE(alias);
}
