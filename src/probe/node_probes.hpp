// The probes of the registry, one function each (see probe.hpp for the contract).
#pragma once

#include "model/facts.hpp"
#include "probe/probe.hpp"

namespace probe {

// Python interpreters, venvs / conda envs and their packages, from files only (never runs Python).
void run_python_probe(const probe::Host& host, model::Facts& facts);
// Every copy of cuDNN / NCCL / NVRTC / cudart / libcuda, their versions, and the copy torch and
// TE would really load. Reads python.* facts, so it runs after the python probe.
void run_libraries_probe(const probe::Host& host, model::Facts& facts);

} // namespace probe
