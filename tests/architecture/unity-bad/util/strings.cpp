#define NVTE_LOCAL 1
#undef NVTE_LOCAL
namespace util {
namespace {
int hidden = 0;
} // namespace
int k_max_links_elsewhere() { return 1; } // external: not file-local
} // namespace util
