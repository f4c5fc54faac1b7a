// The one CSV reader of mplan (published runs, calibration tables, runs import): RFC 4180.
//   - fields are separated by ',' and records by CRLF, LF or a lone CR;
//   - a field that starts with '"' is quoted: it may hold commas, line breaks and doubled quotes
//     ("" stands for one "); text after its closing quote up to the next separator is kept as is;
//   - a '"' inside an unquoted field is an ordinary character;
//   - a UTF-8 byte-order mark at the start of the text is dropped;
//   - blank lines (empty or only spaces/tabs) are skipped, and so are comment lines when
//     Options::comment is set (a line whose first non-blank character is that one);
//   - an unterminated quoted field is an error naming the line where it started.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mplan::csv {

struct Record {
  std::vector<std::string> fields;
  int line = 0;  // 1-based line of the text where the record starts
};

struct Options {
  char comment = 0;  // 0: no comment lines
};

// `what` names the input in errors (a file path or "--runs").
Expected<std::vector<Record>> parse(std::string_view text, const std::string& what, const Options& opt = {});

}  // namespace mplan::csv
