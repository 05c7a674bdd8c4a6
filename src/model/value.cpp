#include "model/value.hpp"

#include "util/strings.hpp"

#include <cstdio>

namespace model {

std::string_view to_string(ValueType type) {
  switch (type) {
  case ValueType::boolean: return "boolean";
  case ValueType::integer: return "integer";
  case ValueType::number: return "number";
  case ValueType::string: return "string";
  case ValueType::version: return "version";
  }
  return "?";
}

double Value::as_double() const {
  if (is(ValueType::integer)) return static_cast<double>(as_int());
  return std::get<double>(m_data);
}

std::string Value::exact_text() const {
  switch (type()) {
  case ValueType::boolean: return as_bool() ? "b1" : "b0";
  case ValueType::integer: return "i" + std::to_string(as_int());
  case ValueType::number: {
    char text[64];
    std::snprintf(text, sizeof text, "d%a", std::get<double>(m_data));
    return text;
  }
  case ValueType::string: return "s" + as_string();
  case ValueType::version: return "v" + as_version().text();
  }
  return {};
}

std::string Value::to_string() const {
  switch (type()) {
  case ValueType::boolean: return as_bool() ? "true" : "false";
  case ValueType::integer: return std::to_string(as_int());
  case ValueType::number: {
    char text[64];
    std::snprintf(text, sizeof text, "%.10g", std::get<double>(m_data));
    std::string s = text;
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  case ValueType::string: return as_string();
  case ValueType::version: return as_version().to_string();
  }
  return {};
}

util::Result<Value> Value::parse_as(ValueType type, std::string_view text) {
  auto bad = [&](std::string_view what) {
    return util::Error{util::ErrorKind::parse, "'" + std::string(text) + "' is not " + std::string(what)};
  };
  switch (type) {
  case ValueType::boolean: {
    auto t = util::to_lower(util::trim(text));
    if (t == "true" || t == "1" || t == "yes") return Value(true);
    if (t == "false" || t == "0" || t == "no") return Value(false);
    return bad("a boolean (true/false)");
  }
  case ValueType::integer: {
    auto n = util::parse_int(util::trim(text));
    if (!n) return bad("an integer");
    return Value(*n);
  }
  case ValueType::number: {
    auto d = util::parse_double(util::trim(text));
    if (!d) return bad("a number");
    return Value(*d);
  }
  case ValueType::string: return Value(std::string(text));
  case ValueType::version: {
    auto v = Version::parse(text);
    if (!v) return v.take_error();
    return Value(std::move(*v));
  }
  }
  return bad("a value");
}

} // namespace model
