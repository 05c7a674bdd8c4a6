#include "model/verdict.hpp"

#include <algorithm>

namespace model {

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
  case Verdict::runs: return "runs";
  case Verdict::at_risk: return "at_risk";
  case Verdict::unknown: return "unknown";
  case Verdict::fails: return "fails";
  case Verdict::no_backend: return "no_backend";
  }
  return "unknown";
}

std::optional<Verdict> parse_verdict(std::string_view text) {
  for (Verdict v : {Verdict::runs, Verdict::at_risk, Verdict::unknown, Verdict::fails, Verdict::no_backend})
    if (text == to_string(v)) return v;
  return std::nullopt;
}

std::string_view describe(Verdict verdict) {
  switch (verdict) {
  case Verdict::runs: return "runs";
  case Verdict::at_risk: return "runs, at risk";
  case Verdict::unknown: return "unknown";
  case Verdict::fails: return "fails";
  case Verdict::no_backend: return "no backend";
  }
  return "unknown";
}

Verdict worse(Verdict a, Verdict b) { return std::max(a, b); }

bool runnable(Verdict verdict) { return verdict == Verdict::runs || verdict == Verdict::at_risk; }

int exit_code(Verdict verdict) {
  switch (verdict) {
  case Verdict::runs: return 0;
  case Verdict::at_risk: return 1;
  case Verdict::unknown: return 3;
  case Verdict::fails:
  case Verdict::no_backend: return 2;
  }
  return 3;
}

std::string_view to_string(EvidenceKind kind) {
  switch (kind) {
  case EvidenceKind::predicted: return "predicted";
  case EvidenceKind::observed: return "observed";
  case EvidenceKind::ran: return "ran";
  }
  return "predicted";
}

} // namespace model
