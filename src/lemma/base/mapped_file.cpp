#include "lemma/base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "lemma/base/error.h"

namespace lemma {

LoadMode parse_load_mode(const std::string& name) {
  if (name == "lazy") return LoadMode::kLazyMmap;
  if (name == "prefault") return LoadMode::kPrefaultMmap;
  if (name == "copy") return LoadMode::kCopy;
  fail<InvalidArgument>("unknown load mode '{}' (expected lazy, prefault or copy)", name);
}

const char* to_string(LoadMode mode) {
  switch (mode) {
    case LoadMode::kLazyMmap: return "lazy";
    case LoadMode::kPrefaultMmap: return "prefault";
    case LoadMode::kCopy: return "copy";
  }
  return "?";
}

namespace {
constexpr size_t kHugePage = size_t{2} << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Anonymous memory for a copied file, 2 MiB aligned and marked MADV_HUGEPAGE before the first touch,
// so that transparent huge pages back it where the kernel allows them (THP "madvise" or "always"):
// a decode step streams every weight once, and 4 KiB pages cost a TLB miss every 4 KiB (measured
// in docs/performance.md). Where THP is off the advice is ignored and the copy works the same.
uint8_t* map_huge_page_buffer(size_t size, const std::string& path) {
  const size_t length = round_up(size, kHugePage);
  const size_t reserved = length + kHugePage;  // room to align the start
  void* p = ::mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail_errno("cannot allocate " + std::to_string(size) + " bytes to copy " + path);
  auto* base = static_cast<uint8_t*>(p);
  uint8_t* aligned = base + (kHugePage - reinterpret_cast<uintptr_t>(base) % kHugePage) % kHugePage;
  if (aligned > base) ::munmap(base, static_cast<size_t>(aligned - base));
  if (base + reserved > aligned + length) ::munmap(aligned + length, static_cast<size_t>(base + reserved - (aligned + length)));
  ::madvise(aligned, length, MADV_HUGEPAGE);
  return aligned;
}

struct FdGuard {
  int fd;
  ~FdGuard() { if (fd >= 0) ::close(fd); }
};
}  // namespace

MappedFile MappedFile::open(const std::string& path, LoadMode mode) {
  const auto start = std::chrono::steady_clock::now();
  MappedFile file;
  file.path_ = path;
  file.mode_ = mode;
  FdGuard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (guard.fd < 0) fail_errno("cannot open " + path);
  struct stat st {};
  if (::fstat(guard.fd, &st) != 0) fail_errno("cannot stat " + path);
  if (S_ISDIR(st.st_mode)) fail<IoError>("{} is a directory, expected a file", path);
  file.size_ = static_cast<size_t>(st.st_size);

  if (file.size_ == 0) {
    // mmap of length 0 fails; an empty file is simply empty.
  } else if (mode == LoadMode::kCopy) {
    uint8_t* aligned = map_huge_page_buffer(file.size_, path);
    file.data_ = aligned;
    file.is_mapped_ = true;
    file.mapped_bytes_ = round_up(file.size_, kHugePage);
    size_t done = 0;
    while (done < file.size_) {
      const ssize_t n = ::pread(guard.fd, aligned + done, file.size_ - done, static_cast<off_t>(done));
      if (n < 0) fail_errno("cannot read " + path);
      if (n == 0) fail<IoError>("{}: file shrank while being read ({} of {} bytes)", path, done, file.size_);
      done += static_cast<size_t>(n);
    }
  } else {
    int flags = MAP_PRIVATE;
    if (mode == LoadMode::kPrefaultMmap) flags |= MAP_POPULATE;
    void* p = ::mmap(nullptr, file.size_, PROT_READ, flags, guard.fd, 0);
    if (p == MAP_FAILED) fail_errno("cannot mmap " + path);
    file.data_ = static_cast<const uint8_t*>(p);
    file.is_mapped_ = true;
    file.mapped_bytes_ = file.size_;
    if (mode == LoadMode::kPrefaultMmap) {
      // MAP_POPULATE is a hint; touch one byte per page so every page really is resident.
      const long page = ::sysconf(_SC_PAGESIZE);
      uint8_t touched = 0;
      for (size_t off = 0; off < file.size_; off += static_cast<size_t>(page)) touched ^= file.data_[off];
      volatile uint8_t sink = touched;  // keeps the loop from being optimised away
      (void)sink;
    }
  }
  file.load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return file;
}

MappedFile MappedFile::from_bytes(std::span<const uint8_t> bytes, std::string name) {
  MappedFile file;
  file.path_ = std::move(name);
  file.mode_ = LoadMode::kCopy;
  file.owned_.assign(bytes.begin(), bytes.end());
  file.data_ = file.owned_.data();
  file.size_ = file.owned_.size();
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    // A moved std::vector keeps its heap buffer, so data_ stays valid for kCopy.
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    is_mapped_ = std::exchange(other.is_mapped_, false);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    owned_ = std::move(other.owned_);
    path_ = std::move(other.path_);
    mode_ = other.mode_;
    load_seconds_ = other.load_seconds_;
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (is_mapped_ && data_) ::munmap(const_cast<uint8_t*>(data_), mapped_bytes_);
  data_ = nullptr;
  size_ = 0;
  is_mapped_ = false;
  mapped_bytes_ = 0;
  owned_.clear();
}

}  // namespace lemma
