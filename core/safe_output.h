// Writing an output file without clobbering what its path names. Every output path of mplan
// (--out, --trace, --fit, --summary-out, plan files, calibrations, SQL exports, plots) goes through
// write_output_file:
//   - a regular file, or a name that does not exist yet, is replaced atomically: a temporary file in
//     the same directory, fsync, rename (an existing file keeps its permission bits);
//   - a symbolic link is resolved, and the file it names is written (the link stays a link);
//   - a character device, FIFO or socket (and anything under /dev or /proc, such as /dev/stdout) is
//     written through, never replaced: `--out /dev/null` discards, it does not create a file;
//   - a directory is refused with a message;
//   - "-" writes to standard output.
#pragma once
#include <string>
#include <string_view>

namespace mplan {

// Returns "" when written, else one message naming the path and what went wrong.
std::string write_output_file(const std::string& path, std::string_view bytes);

// What write_output_file will do with `path`, or a message when it cannot (a directory, a missing
// parent directory): lets a command refuse a bad output path before it does long work.
std::string check_output_path(const std::string& path);

}  // namespace mplan
