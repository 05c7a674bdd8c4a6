// workload::script_words: the words a launch script writes down, read without running it.
#include "workload/shell_words.hpp"

#include <gtest/gtest.h>

#include <map>

namespace {

std::vector<workload::ScriptWord> words_of(std::string_view script, const std::map<std::string, std::string>& env = {}) {
  auto r = workload::script_words(script, "run.sh", [&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : std::vector<workload::ScriptWord>{};
}

// The known words, in order, as one string ("a b c"); unknown words as "?".
std::string known(const std::vector<workload::ScriptWord>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += w.unknown.empty() ? "[" + w.text + "]" : "?[" + w.text + "]";
  }
  return out;
}

const workload::ScriptWord* find(const std::vector<workload::ScriptWord>& words, std::string_view text) {
  for (const auto& w : words)
    if (w.text == text) return &w;
  return nullptr;
}

std::string words_error(std::string_view script) {
  auto r = workload::script_words(script, "bad.sh", {});
  return r.ok() ? std::string("(read)") : r.error().message;
}

} // namespace

TEST(ShellScript, ContinuationsQuotesAndComments) {
  auto w = words_of("torchrun --a 1 \\\n   --b 'two words' \"x y\" # --c 3\n--d=4\n");
  EXPECT_EQ(known(w), "[torchrun] [--a] [1] [--b] [two words] [x y] [--d=4]");
  EXPECT_EQ(w[3].line, 2);
  EXPECT_EQ(w[6].line, 3);
}

TEST(ShellScript, VariablesDefaultsAndArithmetic) {
  auto w = words_of("SEQ=${SEQ_LEN:-8192}\nN=${NODES:-2}\nWORLD=$((8 * $N))\nx --seq $SEQ --world $WORLD --from-env $HOME_DIR\n",
                    {{"HOME_DIR", "/home/me"}});
  EXPECT_EQ(known(w), "[8192] [2] [16] [x] [--seq] [8192] [--world] [16] [--from-env] [/home/me]");
  auto overridden = words_of("SEQ=${SEQ_LEN:-8192}\nx $SEQ\n", {{"SEQ_LEN", "32768"}});
  EXPECT_EQ(known(overridden), "[32768] [x] [32768]");
}

TEST(ShellScript, ArraysExpandAsTheShellDoes) {
  auto w = words_of("A=(--a 1 \"--fp8-format hybrid\")\nA+=(--b)\ncmd ${A[@]}\ncmd \"${A[@]}\"\necho ${#A[@]} ${A[1]}\n");
  // Unquoted: the quoted element splits; quoted: it stays one word.
  EXPECT_EQ(known(w), "[--a] [1] [--fp8-format hybrid] [--b] "
                      "[cmd] [--a] [1] [--fp8-format] [hybrid] [--b] "
                      "[cmd] [--a] [1] [--fp8-format hybrid] [--b] "
                      "[echo] [4] [1]");
}

TEST(ShellScript, DecidableConditionsChooseTheirBranch) {
  auto w = words_of("DTYPE=fp8\nif [[ \"$DTYPE\" == \"fp8\" && -n $DTYPE ]]; then\n  A=(--fp8)\nelif [ x = y ]; then A=(--y)\nelse\n  A=(--bf16)\nfi\n"
                    "EMPTY=\n[ -z \"$EMPTY\" ] && B=(--was-empty) || B=(--was-set)\n"
                    "case \"$DTYPE\" in\n  bf16) C=(--c-bf16) ;;\n  fp*) C=(--c-fp8) ;;\n  *) C=(--c-other) ;;\nesac\n");
  EXPECT_NE(find(w, "--fp8"), nullptr);
  EXPECT_EQ(find(w, "--y"), nullptr);
  EXPECT_EQ(find(w, "--bf16"), nullptr);
  EXPECT_NE(find(w, "--was-empty"), nullptr);
  EXPECT_EQ(find(w, "--was-set"), nullptr);
  EXPECT_NE(find(w, "--c-fp8"), nullptr);
  EXPECT_EQ(find(w, "--c-bf16"), nullptr);
  EXPECT_EQ(find(w, "--c-other"), nullptr);
  EXPECT_TRUE(find(w, "--fp8")->unknown.empty());
}

TEST(ShellScript, AConditionOnTheJobsEnvironmentIsUnknown) {
  // The job may have WANDB_API_KEY set where the doctor does not: both branches may run.
  auto w = words_of("if [ -n \"${WANDB_API_KEY}\" ]; then A=(--wandb); else A=(--no-wandb); fi\n");
  ASSERT_NE(find(w, "--wandb"), nullptr);
  ASSERT_NE(find(w, "--no-wandb"), nullptr);
  EXPECT_FALSE(find(w, "--wandb")->unknown.empty());
  EXPECT_FALSE(find(w, "--no-wandb")->unknown.empty());
  auto given = words_of("if [ -n \"${WANDB_API_KEY}\" ]; then A=(--wandb); else A=(--no-wandb); fi\n", {{"WANDB_API_KEY", "k"}});
  EXPECT_NE(find(given, "--wandb"), nullptr);
  EXPECT_EQ(find(given, "--no-wandb"), nullptr);
}

TEST(ShellScript, WhatCannotBeKnownSaysWhy) {
  auto w = words_of("if [ -f /etc/cluster ]; then A=(--maybe); fi\nfor i in 1 2; do B=(--looped); done\n"
                    "x --host $(hostname) --seq $SEQ --first $1 ${A[@]}\n");
  const auto* maybe = find(w, "--maybe");
  ASSERT_NE(maybe, nullptr);
  ASSERT_FALSE(maybe->unknown.empty());
  EXPECT_NE(maybe->unknown[0].why.find("inside the if at line 1"), std::string::npos);
  const auto* looped = find(w, "--looped");
  ASSERT_NE(looped, nullptr);
  EXPECT_NE(looped->unknown.at(0).why.find("loop"), std::string::npos);
  // Unknown values that expand to nothing stay as empty words with the reason.
  std::vector<std::string> reasons;
  for (const auto& word : w)
    if (word.line == 3 && !word.unknown.empty()) reasons.push_back(word.unknown[0].why);
  ASSERT_EQ(reasons.size(), 4u) << known(w);
  EXPECT_NE(reasons[0].find("$(hostname) runs a command"), std::string::npos);
  EXPECT_NE(reasons[1].find("$SEQ is set neither in run.sh nor in the environment"), std::string::npos);
  EXPECT_NE(reasons[2].find("$1 is an argument given to the script"), std::string::npos);
  EXPECT_NE(reasons[3].find("set inside the if at line 1"), std::string::npos);
}

TEST(ShellScript, AReasonQuotesAtMostAFewHundredBytesOfTheScript) {
  // A reason is copied to every piece of the value it marks: quoting a 5,000-byte ${...} in each
  // of them made a few KB of script into gigabytes (fuzz campaign, 2026-11-29).
  std::string pattern(5000, 'v');
  auto w = words_of("B=\"a b c\"\nx ${B#*" + pattern + "} $" + pattern + "\n");
  std::size_t seen = 0;
  for (const auto& word : w)
    for (const auto& u : word.unknown) {
      ++seen;
      EXPECT_LE(u.why.size(), 200u + std::string("…").size()) << u.why.substr(0, 80);
    }
  EXPECT_EQ(seen, 4u) << known(w); // a, b and c, each with the pattern's reason; the unset variable
  for (const char* piece : {"a", "b", "c"}) {
    const auto* word = find(w, piece);
    ASSERT_NE(word, nullptr) << piece;
    ASSERT_EQ(word->unknown.size(), 1u) << piece;
    EXPECT_EQ(word->unknown[0].why.rfind("the pattern of ${B#*vvv", 0), 0u) << word->unknown[0].why;
    EXPECT_TRUE(word->unknown[0].why.ends_with("…"));
  }
}

TEST(ShellScript, PiecesTouchedByARange) {
  // The splitting of values and the argument reader share these: a range touches the pieces it
  // overlaps, an empty range the piece whose ends hold it, a range over blanks only none.
  auto pieces = workload::pieces_between("ab  cd e", " ");
  ASSERT_EQ(pieces, (workload::TextPieces{{0, 2}, {4, 6}, {7, 8}}));
  using Span = std::pair<std::size_t, std::size_t>;
  EXPECT_EQ(workload::pieces_touched(pieces, 1, 5), Span(0, 2));
  EXPECT_EQ(workload::pieces_touched(pieces, 0, 8), Span(0, 3));
  EXPECT_EQ(workload::pieces_touched(pieces, 2, 2), Span(0, 1)); // at a piece's end
  EXPECT_EQ(workload::pieces_touched(pieces, 4, 4), Span(1, 2)); // at a piece's start
  auto [first, last] = workload::pieces_touched(pieces, 3, 3);   // between pieces
  EXPECT_EQ(first, last);
  auto [from, to] = workload::pieces_touched(pieces, 6, 7); // the blank between cd and e
  EXPECT_EQ(from, to);
  EXPECT_TRUE(workload::pieces_between(" \t ", " \t").empty());
}

TEST(ShellScript, UnknownPartsOfAStringStayPartial) {
  // A command kept in a string: the unknown $PYTHONPATH must not make its other words unknown.
  auto w = words_of("CMD=\"export PYTHONPATH=/opt/m:${PYTHONPATH}; python train.py --seq-length 4096\"\nbash -c \"$CMD\"\n");
  ASSERT_GE(w.size(), 1u);
  const auto& value = w[0];
  ASSERT_EQ(value.unknown.size(), 1u);
  auto seq = value.text.find("--seq-length 4096");
  ASSERT_NE(seq, std::string::npos);
  EXPECT_LT(value.unknown[0].end, seq); // the unknown range ends before the arguments
  const auto* carried = find(w, value.text);
  ASSERT_NE(carried, nullptr);
  EXPECT_EQ(carried->unknown.size(), 1u);
}

TEST(ShellScript, HeredocsAreReadAsScripts) {
  auto w = words_of("CP=2\nsbatch <<EOF\n#SBATCH --nodes=4\nsrun python pretrain_gpt.py --context-parallel-size ${CP}\nEOF\necho after\n");
  EXPECT_EQ(known(w), "[2] [sbatch] [srun] [python] [pretrain_gpt.py] [--context-parallel-size] [2] [echo] [after]");
  EXPECT_EQ(find(w, "srun")->line, 4);
}

TEST(ShellScript, FunctionsAndGroups) {
  auto w = words_of("build() {\n  A=(--in-function)\n}\n{ B=(--grouped); }\n( C=(--subshell) )\n");
  ASSERT_NE(find(w, "--in-function"), nullptr);
  EXPECT_NE(find(w, "--in-function")->unknown.at(0).why.find("function build"), std::string::npos);
  EXPECT_TRUE(find(w, "--grouped")->unknown.empty());
  EXPECT_TRUE(find(w, "--subshell")->unknown.empty());
}

TEST(ShellScript, SyntaxItCannotFollowIsAnErrorWithTheLine) {
  EXPECT_NE(words_error("echo 'open\n").find("bad.sh:1: unterminated single quote"), std::string::npos) << words_error("echo 'open\n");
  EXPECT_NE(words_error("if true; then\n  echo x\n").find("has no fi"), std::string::npos) << words_error("if true; then\n  echo x\n");
  EXPECT_NE(words_error("A=(--a\n--b\n").find("unterminated array A=("), std::string::npos);
  EXPECT_NE(words_error("cat <<EOF\nbody\n").find("no closing EOF"), std::string::npos);
  EXPECT_NE(words_error("x ${A\n").find("unterminated ${"), std::string::npos);
  EXPECT_NE(words_error("case x in\n a) y ;;\n").find("has no esac"), std::string::npos);
}
