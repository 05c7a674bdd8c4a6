// The catalog of canonical fact names (ARCHITECTURE.md "Fact names"): each name's type and
// meaning. Rules are type-checked against it at load time, `--set` converts text with it, and the
// Facts JSON loader types its leaves by it. Indexed names are written with "[]" ("gpu[].sm");
// '*' stands for one name segment ("env.*").
#pragma once

#include "model/value.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace model {

struct FactSpec {
  std::string_view pattern;
  ValueType type;
  std::string_view description;
};

// Every known fact pattern, in report order.
std::span<const FactSpec> fact_catalog();

// "gpu[3].sm" -> "gpu[].sm".
std::string normalize_fact_name(std::string_view name);

// The spec a concrete or collection-relative name matches ("gpu[0].sm", "gpu.sm", "env.NVTE_X"),
// or nullptr for an unknown name.
const FactSpec* find_fact_spec(std::string_view name);

// What the catalog knows a concrete name to be, for loaders that must refuse a wrongly shaped
// tree: a single value ("driver.version"), an object of named members ("driver", "env"), a
// collection ("gpu", as gpu[]); "gpu" is both a collection and an object (gpu.count). All false:
// a name outside the catalog (a newer doctor's fact), whose shape is free.
struct FactShape {
  bool value = false;
  bool object = false;
  bool collection = false;
  bool known() const { return value || object || collection; }
};
FactShape fact_shape(std::string_view name);

// Known names closest to an unknown one, for "did you mean" hints (at most 3).
std::vector<std::string> suggest_fact_names(std::string_view unknown);

} // namespace model
