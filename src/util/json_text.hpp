// JSON text that cannot throw on bytes that are not UTF-8. Node data (paths, file names, a GPU's
// name) is bytes, and nlohmann::json's dump() throws type_error 316 on invalid UTF-8 by default:
// one Latin-1 venv directory would abort the whole report. Such bytes come out as U+FFFD instead.
#pragma once

#include <string>

namespace util {

template <class Json>
std::string json_text(const Json& doc, int indent = -1) {
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace);
}

} // namespace util
