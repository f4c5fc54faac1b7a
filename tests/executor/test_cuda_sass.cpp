// Which GPU architectures a binary carries SASS (cubins) for.
//   test_cuda_sass fatbin BINARY ARCH...            parses the ELF's .nv_fatbin section itself
//   test_cuda_sass cuobjdump BINARY CUOBJDUMP ARCH... runs `cuobjdump --list-elf` (exit 77 when the
//                                                   toolkit has no cuobjdump)
// Exit 0 when every ARCH (e.g. 80 90 100) has at least one cubin; the table is printed either way.
// Fatbin container (little endian): magic 0xBA55ED50, u16 version, u16 header size, u64 payload
// size; then entries: u16 kind (1 PTX, 2 ELF cubin), u16 version, u32 header size, u64 payload size,
// ..., u32 sm version at offset 28 (80, 90, 100 ...). Containers of several translation units are
// concatenated (8-byte aligned) in a linked binary.
#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <class T>
bool get(const std::vector<uint8_t>& b, size_t at, T* v) {
  if (at + sizeof(T) > b.size()) return false;
  std::memcpy(v, b.data() + at, sizeof(T));
  return true;
}

// The bytes of ELF section `name`, empty when absent.
std::vector<uint8_t> elf_section(const std::vector<uint8_t>& f, const char* name) {
  Elf64_Ehdr eh;
  if (!get(f, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return {};
  Elf64_Shdr strtab;
  if (!get(f, size_t(eh.e_shoff) + size_t(eh.e_shstrndx) * eh.e_shentsize, &strtab)) return {};
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!get(f, size_t(eh.e_shoff) + size_t(i) * eh.e_shentsize, &sh)) return {};
    const size_t at = size_t(strtab.sh_offset) + sh.sh_name;
    if (at >= f.size()) continue;
    if (std::strcmp(reinterpret_cast<const char*>(f.data() + at), name) == 0 && sh.sh_offset + sh.sh_size <= f.size())
      return std::vector<uint8_t>(f.begin() + long(sh.sh_offset), f.begin() + long(sh.sh_offset + sh.sh_size));
  }
  return {};
}

// arch -> (cubins, ptx)
std::map<int, std::pair<int, int>> fatbin_archs(const std::vector<uint8_t>& s) {
  std::map<int, std::pair<int, int>> out;
  size_t pos = 0;
  while (pos + 16 <= s.size()) {
    uint32_t magic = 0;
    get(s, pos, &magic);
    if (magic != 0xBA55ED50u) {  // padding between containers
      pos += 8;
      continue;
    }
    uint16_t hsize = 0;
    uint64_t fsize = 0;
    get(s, pos + 6, &hsize);
    get(s, pos + 8, &fsize);
    size_t p = pos + hsize;
    const size_t end = std::min(s.size(), size_t(pos + hsize + fsize));
    while (p + 32 <= end) {
      uint16_t kind = 0;
      uint32_t ehs = 0, arch = 0;
      uint64_t psize = 0;
      get(s, p, &kind);
      get(s, p + 4, &ehs);
      get(s, p + 8, &psize);
      get(s, p + 28, &arch);
      if (ehs == 0) break;
      if (kind == 2) out[int(arch)].first++;
      if (kind == 1) out[int(arch)].second++;
      p += ehs + psize;
    }
    pos = end > pos ? (end + 7) / 8 * 8 : pos + 8;
  }
  return out;
}

int check(const std::map<int, std::pair<int, int>>& found, char** archs, int n) {
  int missing = 0;
  for (int i = 0; i < n; ++i) {
    const int a = std::atoi(archs[i]);
    auto it = found.find(a);
    const bool ok = it != found.end() && it->second.first > 0;
    std::printf("sm_%d: %s\n", a, ok ? "SASS present" : "NO SASS");
    missing += !ok;
  }
  return missing ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s fatbin BINARY ARCH... | cuobjdump BINARY CUOBJDUMP ARCH...\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1], binary = argv[2];
  if (mode == "fatbin") {
    const auto f = read_file(binary);
    const auto sec = elf_section(f, ".nv_fatbin");
    if (sec.empty()) {
      std::printf("%s: no .nv_fatbin section\n", binary.c_str());
      return 1;
    }
    const auto found = fatbin_archs(sec);
    for (const auto& [arch, n] : found) std::printf("  arch %d: %d cubin(s), %d ptx\n", arch, n.first, n.second);
    return check(found, argv + 3, argc - 3);
  }
  if (mode == "cuobjdump") {
    const std::string tool = argc > 3 ? argv[3] : "";
    if (tool.empty() || tool.find("NOTFOUND") != std::string::npos || !std::ifstream(tool)) {
      std::printf("cuobjdump is not part of this CUDA toolkit: skipped (the fatbin test checks the same)\n");
      return 77;
    }
    const std::string cmd = "\"" + tool + "\" --list-elf \"" + binary + "\"";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return 1;
    std::map<int, std::pair<int, int>> found;
    char line[1024];
    while (std::fgets(line, sizeof(line), p)) {
      std::fputs(line, stdout);
      const char* sm = std::strstr(line, ".sm_");
      if (sm) found[std::atoi(sm + 4)].first++;
    }
    if (pclose(p) != 0) return 1;
    return check(found, argv + 4, argc - 4);
  }
  return 2;
}
