// RFC 4180 CSV reader (see csv.h).
#include "core/csv.h"

namespace mplan::csv {

namespace {

bool blank(char c) { return c == ' ' || c == '\t'; }

// Position just past the end of the line that starts at i (past its CRLF, LF or CR).
size_t skip_line(std::string_view t, size_t i) {
  while (i < t.size() && t[i] != '\n' && t[i] != '\r') ++i;
  if (i < t.size() && t[i] == '\r' && i + 1 < t.size() && t[i + 1] == '\n') ++i;
  return i < t.size() ? i + 1 : i;
}

// Whether the line at i is blank or a comment (then it is not a record).
bool skippable(std::string_view t, size_t i, char comment) {
  while (i < t.size() && blank(t[i])) ++i;
  if (i == t.size() || t[i] == '\n' || t[i] == '\r') return true;
  return comment != 0 && t[i] == comment;
}

}  // namespace

Expected<std::vector<Record>> parse(std::string_view text, const std::string& what, const Options& opt) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::vector<Record> out;
  int line = 1;
  size_t i = 0;
  while (i < text.size()) {
    if (skippable(text, i, opt.comment)) {
      i = skip_line(text, i);
      ++line;
      continue;
    }
    Record rec;
    rec.line = line;
    std::string field;
    bool end_of_record = false;
    while (!end_of_record) {
      if (i < text.size() && text[i] == '"') {  // quoted field
        const int start = line;
        ++i;
        for (;;) {
          if (i >= text.size())
            return Error(what + ": line " + std::to_string(start) +
                         ": a quoted field is not closed (a '\"' is missing; write \"\" for a quote inside a field)");
          char c = text[i++];
          if (c == '"') {
            if (i < text.size() && text[i] == '"') {
              field += '"';
              ++i;
              continue;
            }
            break;
          }
          if (c == '\r' && i < text.size() && text[i] == '\n') {  // CRLF inside a field stays one break
            field += "\r\n";
            ++i;
            ++line;
            continue;
          }
          if (c == '\n' || c == '\r') ++line;
          field += c;
        }
      }
      // unquoted field, or what follows a closing quote, up to a separator
      while (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') field += text[i++];
      rec.fields.push_back(std::move(field));
      field.clear();
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      end_of_record = true;
      if (i < text.size()) {
        if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
        ++i;
        ++line;
      }
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace mplan::csv
