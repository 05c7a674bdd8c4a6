#include "app/app.hpp"
#include "app/command_io.hpp"
#include "report/render.hpp"
#include "util/logging.hpp"

namespace app {

int run_probe(const Options& options) {
  util::log::Laps laps("probe command"); // -vv: the probes, then what the command adds to them
  model::Facts facts = load_facts(options);
  laps.lap("facts");
  if (options.format == Format::json) {
    write_output(options, facts.to_json() + "\n");
  } else {
    write_output(options,
                 report::render_probe_text(facts, {options.color ? report::Color::yes : report::Color::no, options.verbosity > 0}));
  }
  laps.lap("rendered and written");
  return 0;
}

} // namespace app
