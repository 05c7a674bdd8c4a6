#define NVTE_CHECK(x) (x)
namespace util {
namespace {
constexpr int k_max_links = 40;
using Json = int; // the same alias again: allowed
const char* k_raw = R"(namespace { int hidden; })";
int name(int fd) { return fd; } // an overload of another file's helper: a hazard too
} // namespace
static int counter = 1;
} // namespace util
