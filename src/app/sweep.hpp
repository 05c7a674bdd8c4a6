// --sweep KEY=V1,V2,... (repeatable): the one parser explain and selftest share, and the cells of
// the cartesian product, each as the --workload-set settings it adds. window_size values hold a
// comma themselves, so they are separated by ';' (--sweep "window_size=128,0;-1,-1").
#pragma once

#include "report/render.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace app {

struct SweepCellSettings {
  std::vector<std::string> settings; // "key=value", one per axis
  std::vector<std::string> values;   // the values alone, one per axis
};

// util::Fatal on a malformed spec or a value list with an empty value.
std::vector<report::SweepAxis> parse_sweeps(const std::vector<std::string>& specs);
// Every combination, the last axis fastest; no axes: one empty cell. util::Fatal naming the count
// when there are more than max_cells (what is too many depends on what a cell costs).
std::vector<SweepCellSettings> sweep_cells(const std::vector<report::SweepAxis>& axes, std::size_t max_cells);

} // namespace app
