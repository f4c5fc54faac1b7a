// Plain-text tables for the command line: columns aligned, numbers right-aligned.
#pragma once
#include <string>
#include <vector>

namespace mplan {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Numeric-looking cells are right-aligned unless their column is marked left.
  void left_align(size_t column) {
    if (left_.size() <= column) left_.resize(column + 1, false);
    left_[column] = true;
  }
  std::string render() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> left_;
};

// Fixed-point formatting helpers.
std::string fmt(double v, int decimals = 2);
// 8.03e9 -> "8.03 B", 1.2e12 -> "1.20 T", 5.3e6 -> "5.30 M".
std::string fmt_count(double v);
std::string fmt_pct(double fraction, int decimals = 1);

}  // namespace mplan
