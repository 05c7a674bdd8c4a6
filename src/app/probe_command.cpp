#include "app/app.hpp"
#include "app/command_io.hpp"
#include "report/render.hpp"

namespace app {

int run_probe(const Options& options) {
  model::Facts facts = load_facts(options);
  if (options.format == Format::json) {
    write_output(options, facts.to_json() + "\n");
  } else {
    write_output(options, report::render_probe_text(facts, {options.color ? report::Color::yes : report::Color::no,
                                                            options.verbosity > 0}));
  }
  return 0;
}

} // namespace app
