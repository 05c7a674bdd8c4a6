#include "app/sweep.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

namespace app {

std::vector<report::SweepAxis> parse_sweeps(const std::vector<std::string>& specs) {
  std::vector<report::SweepAxis> axes;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw util::Fatal{"--sweep '" + util::one_line(spec) + "': expected KEY=V1,V2,..."};
    report::SweepAxis axis{std::string(util::trim(spec.substr(0, eq))), {}};
    const char separator = axis.key == "window_size" ? ';' : ',';
    for (auto value : util::split(std::string_view(spec).substr(eq + 1), separator)) {
      auto trimmed = util::trim(value);
      if (trimmed.empty())
        throw util::Fatal{"--sweep '" + util::one_line(spec) + "': an empty value" +
                          (axis.key == "window_size" ? " (window_size values are separated by ';')" : "")};
      axis.values.emplace_back(trimmed);
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

std::vector<SweepCellSettings> sweep_cells(const std::vector<report::SweepAxis>& axes, std::size_t max_cells) {
  std::size_t total = 1;
  for (const auto& axis : axes) {
    total *= axis.values.size();
    if (total > max_cells) break;
  }
  if (total > max_cells) {
    std::size_t all = 1; // the real count, for the message (saturating)
    for (const auto& axis : axes) all = all > max_cells * 1000 ? all : all * axis.values.size();
    throw util::Fatal{"--sweep: " + std::to_string(all) + " cells, more than " + std::to_string(max_cells) + " (limit " +
                      std::to_string(max_cells) + ", the sweep-cells cap); sweep fewer values at once"};
  }
  std::vector<SweepCellSettings> cells;
  cells.reserve(total);
  std::vector<std::size_t> index(axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    SweepCellSettings cell;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      cell.settings.push_back(axes[i].key + "=" + axes[i].values[index[i]]);
      cell.values.push_back(axes[i].values[index[i]]);
    }
    cells.push_back(std::move(cell));
    for (std::size_t i = axes.size(); i-- > 0;) {
      if (++index[i] < axes[i].values.size()) break;
      index[i] = 0;
    }
  }
  return cells;
}

} // namespace app
