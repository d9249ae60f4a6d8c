#include "lemma/kernels/kernel_scratch.h"

#include <cstdint>
#include <utility>

namespace lemma::kernels {

namespace {
constexpr size_t kAlignment = 64;
}  // namespace

KernelScratch::KernelScratch() = default;
KernelScratch::~KernelScratch() = default;
KernelScratch::KernelScratch(KernelScratch&& other) noexcept
    : storage_(std::move(other.storage_)), capacity_(std::exchange(other.capacity_, 0)) {}
KernelScratch& KernelScratch::operator=(KernelScratch&& other) noexcept {
  storage_ = std::move(other.storage_);
  capacity_ = std::exchange(other.capacity_, 0);
  return *this;
}

std::byte* KernelScratch::reserve(size_t bytes) {
  if (bytes > capacity_ || storage_ == nullptr) {
    storage_ = std::make_unique_for_overwrite<std::byte[]>(bytes + kAlignment);
    capacity_ = bytes;
  }
  const auto address = reinterpret_cast<uintptr_t>(storage_.get());
  return storage_.get() + (kAlignment - address % kAlignment) % kAlignment;
}

size_t KernelScratch::capacity() const { return capacity_; }

void run_with_own_scratch(const MatmulArgs& args, void (*kernel)(const MatmulArgs&)) {
  KernelScratch own;
  MatmulArgs with = args;
  with.scratch = &own;
  kernel(with);
}

void run_with_own_scratch(const FlashSplitArgs& args, void (*kernel)(const FlashSplitArgs&)) {
  KernelScratch own;
  FlashSplitArgs with = args;
  with.scratch = &own;
  kernel(with);
}

}  // namespace lemma::kernels
