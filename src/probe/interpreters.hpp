// Python interpreters of a node, found from files only: python3 / python3.X on the job's PATH,
// the active VIRTUAL_ENV and CONDA_PREFIX, and --python. For each: its prefix (venv, conda env or
// system), version and site-packages directories — what `python -c "import site"` would say,
// without running it.
#pragma once

#include "model/version.hpp"
#include "probe/probe.hpp"

#include <optional>
#include <string>
#include <vector>

namespace probe {

struct Interpreter {
  std::string path;     // node path as found (a venv's bin/python3 is not resolved: the venv is its identity)
  std::string origin;   // path, virtual_env, conda_prefix, option (--python)
  std::string prefix;   // sys.prefix
  std::string env_kind; // venv, conda, system
  std::optional<model::Version> version;
  std::string version_source; // pyvenv.cfg, file_name, symlink, lib_dir
  std::vector<std::string> site_packages; // existing directories; the first is purelib
  // PYTHONPATH's existing absolute directories, in order: on sys.path before site-packages, so
  // a package installed with `pip install --target DIR` and DIR on PYTHONPATH is found there.
  std::vector<std::string> python_path;
  // python_path then site_packages: sys.path's order of the directories that hold packages.
  std::vector<std::string> package_dirs() const;
  std::string purelib;  // sysconfig's purelib, even when it does not exist
};

struct InterpreterScan {
  std::vector<Interpreter> interpreters; // --python first, then VIRTUAL_ENV, CONDA_PREFIX, PATH order
  std::vector<std::string> problems;     // e.g. "--python /x: not found"
};

// Finds every interpreter of the host; duplicates (python3 and python3.12 of one prefix) are
// merged, keeping the first.
InterpreterScan find_interpreters(const Host& host);

} // namespace probe
