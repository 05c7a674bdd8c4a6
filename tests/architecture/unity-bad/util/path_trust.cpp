// As src/util/path_trust.cpp was before the unity fix: the same constant as file_in_root.cpp.
#define NVTE_CHECK(x) (x)
namespace util {
namespace {
constexpr int k_max_links = 40; // "a { brace" in a comment and a string: "}"
using Json = int;
std::string name(std::string_view path) { return std::string(path); }
} // namespace
static int counter = 0;
} // namespace util
