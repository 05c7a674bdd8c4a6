// The precompiled header of unity builds (cmake/Settings.cmake, NVTE_UNITY_BUILD): the headers
// that most translation units parse — the standard library's containers, strings, filesystem and
// nlohmann/json. Included by the compiler (-include) into every unity batch of every library,
// so it holds nothing of the project's own and no macro that changes a file's meaning.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
