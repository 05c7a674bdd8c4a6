// Value: one typed fact or workload value.
#pragma once

#include "model/version.hpp"

#include <cstdint>
#include <string>
#include <variant>

namespace model {

enum class ValueType { boolean, integer, number, string, version };

std::string_view to_string(ValueType type);

class Value {
public:
  Value() : m_data(false) {}
  Value(bool b) : m_data(b) {}
  Value(int i) : m_data(static_cast<std::int64_t>(i)) {}
  Value(long i) : m_data(static_cast<std::int64_t>(i)) {}
  Value(long long i) : m_data(static_cast<std::int64_t>(i)) {}
  Value(unsigned long i) : m_data(static_cast<std::int64_t>(i)) {}
  Value(double d) : m_data(d) {}
  Value(std::string s) : m_data(std::move(s)) {}
  Value(const char* s) : m_data(std::string(s)) {}
  Value(Version v) : m_data(std::move(v)) {}

  ValueType type() const { return static_cast<ValueType>(m_data.index()); }
  bool is(ValueType t) const { return type() == t; }

  bool as_bool() const { return std::get<bool>(m_data); }
  std::int64_t as_int() const { return std::get<std::int64_t>(m_data); }
  double as_double() const; // integer or number
  const std::string& as_string() const { return std::get<std::string>(m_data); }
  const Version& as_version() const { return std::get<Version>(m_data); }

  // For messages and text reports: "true", "80", "8.0", "NVIDIA H100", "9.19.0".
  std::string to_string() const;
  // The type and the value exactly (a number's every bit, a version's text): equal texts are
  // equal values, for digests ("i80", "d0x1p+3", "sNVIDIA H100", "v9.19.0").
  std::string exact_text() const;

  // Converts text to a value of the wanted type ("true", "80", "9.3.0"); the error says why not.
  static util::Result<Value> parse_as(ValueType type, std::string_view text);

  bool operator==(const Value& other) const = default;

private:
  std::variant<bool, std::int64_t, double, std::string, Version> m_data;
};

} // namespace model
