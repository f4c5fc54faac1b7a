// Reading an input file with limits. Every file mplan reads from a user (--model, --cluster, --plan,
// --calibration, --runs, --memory, --csv, --megatron-log, --data, SQL imports) goes through
// read_input_file: only a regular file is read, or standard input for "-"; a directory, FIFO,
// device or socket is refused before a byte is read (so /dev/zero cannot exhaust memory and a FIFO
// cannot block forever), and a file above the size cap is refused with its size.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace mplan {

// Caps by kind of input: JSON documents (model, cluster, plan, calibration) and tables/logs.
constexpr size_t kMaxJsonInputBytes = size_t(64) << 20;    // 64 MiB
constexpr size_t kMaxTableInputBytes = size_t(512) << 20;  // 512 MiB (CSV files, training logs)

// The whole file, or nullopt with one message appended to `problems` naming the path.
std::optional<std::string> read_input_file(const std::string& path, size_t max_bytes, std::vector<std::string>& problems);

// "" when `path` names a regular file (or is "-"), else the message read_input_file would give.
std::string check_input_file(const std::string& path);

}  // namespace mplan
