// The libyaml tree of the rules loader: the yaml-cpp behaviours the loader relies on (null
// scalars, quoted strings, marks, mapping entries in order, aliases) and errors with a position.
#include "rules/yaml_tree.hpp"

#include "rules/preparsed.hpp"
#include "util/file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

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

namespace {

// The whole tree as text: types, marks, scalars, and for a node met before (an alias) the
// number it was first given, so that shared nodes must stay shared.
void dump(const rules::detail::YamlNode& node, std::map<const void*, int>& seen, std::string& out) {
  const void* id = &node.Scalar(); // a scalar's own string; the shared empty one for the rest
  if (node.IsScalar()) {
    auto [it, fresh] = seen.emplace(id, static_cast<int>(seen.size()));
    if (!fresh) {
      out += "*" + std::to_string(it->second);
      return;
    }
  }
  out += std::to_string(node.Mark().line) + ":" + std::to_string(node.Mark().column);
  if (node.IsNull()) out += "~";
  if (node.IsScalar()) out += "'" + node.Scalar() + "'";
  if (node.IsSequence() || node.IsMap()) {
    out += node.IsMap() ? "{" : "[";
    for (const auto& entry : node) {
      if (node.IsMap()) {
        dump(entry.first, seen, out);
        out += "=";
        dump(entry.second, seen, out);
      } else {
        dump(entry, seen, out);
      }
      out += ",";
    }
    out += node.IsMap() ? "}" : "]";
  }
}

std::string dump(const YamlDocument& doc) {
  std::map<const void*, int> seen;
  std::string out;
  dump(doc.root(), seen, out);
  return out;
}

} // namespace

// The binary form the build stores the shipped rules in gives back the same tree: marks, nulls
// (with their own marks), block scalars, bytes outside ASCII, aliases to one node.
TEST(YamlTree, BinaryFormGivesBackTheSameTree) {
  YamlError error;
  auto doc = YamlDocument::parse("a: &x [1, ~, 'q']\nb: *x\nc: |\n  two\n  lines\nd: \"\\u00e9\\0\"\ne:\n", error);
  ASSERT_TRUE(doc) << error.message;
  std::string binary = doc->to_binary();
  auto back = YamlDocument::from_binary(binary);
  ASSERT_TRUE(back);
  EXPECT_EQ(dump(*back), dump(*doc));
  EXPECT_NE(dump(*doc).find('*'), std::string::npos); // the alias is in the dump
  // Truncated or extended data is refused, not read past its end.
  for (std::size_t n = 0; n < binary.size(); n += 7) EXPECT_FALSE(YamlDocument::from_binary(binary.substr(0, n))) << n;
  EXPECT_FALSE(YamlDocument::from_binary(binary + "x"));
}

// Every shipped rules file is in the binary with its parse (rules/preparsed.hpp): the loader then
// skips libyaml for it, and the tree it takes is the tree libyaml gives. A file left out (the build
// step not run, a new file not picked up) would load, only slower: this is what notices.
TEST(YamlTree, EveryShippedRulesFileIsPreparsedToItsOwnTree) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(NVTE_RULES_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    auto text = util::read_file(entry.path());
    ASSERT_TRUE(text.ok()) << entry.path();
    std::string_view tree = rules::detail::preparsed_tree(*text);
    ASSERT_FALSE(tree.empty()) << entry.path() << " is not in the binary";
    YamlError error;
    auto parsed = YamlDocument::parse(*text, error);
    ASSERT_TRUE(parsed) << entry.path() << ": " << error.message;
    auto stored = YamlDocument::from_binary(tree);
    ASSERT_TRUE(stored) << entry.path();
    EXPECT_EQ(dump(*stored), dump(*parsed)) << entry.path();
  }
  EXPECT_GT(files, 40u);
  EXPECT_EQ(rules::detail::preparsed_files().size(), files);
  // One byte changed: not the shipped file any more, so parsed at run time.
  auto text = util::read_file(std::filesystem::path(NVTE_RULES_DIR) / "cudnn.yaml");
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(rules::detail::preparsed_tree(*text).empty());
  (*text)[text->size() - 1] = ' ';
  EXPECT_TRUE(rules::detail::preparsed_tree(*text).empty());
}
