// Counting global operator new/delete for allocation tests. Include it in exactly ONE source file
// of a test executable: it replaces the program's operator new and delete (counting is off until a
// test sets `counting`, so the rest of the program is unaffected).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace lemma::testing::allocations {

inline std::atomic<bool> counting{false};
inline std::atomic<int64_t> count{0};      // allocations while counting
inline std::atomic<uint64_t> largest{0};   // the largest one, in bytes

inline void* allocate(std::size_t size, std::size_t align) {
  if (counting.load(std::memory_order_relaxed)) {
    count.fetch_add(1, std::memory_order_relaxed);
    uint64_t seen = largest.load(std::memory_order_relaxed);
    while (size > seen && !largest.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
    }
  }
  if (size == 0) size = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (size + align - 1) / align * align)
                                                : std::malloc(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

inline void* allocate_nothrow(std::size_t size) noexcept {
  try {
    return allocate(size, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}

}  // namespace lemma::testing::allocations

void* operator new(std::size_t size) { return lemma::testing::allocations::allocate(size, alignof(std::max_align_t)); }
void* operator new[](std::size_t size) { return lemma::testing::allocations::allocate(size, alignof(std::max_align_t)); }
void* operator new(std::size_t size, std::align_val_t align) {
  return lemma::testing::allocations::allocate(size, static_cast<std::size_t>(align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return lemma::testing::allocations::allocate(size, static_cast<std::size_t>(align));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return lemma::testing::allocations::allocate_nothrow(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return lemma::testing::allocations::allocate_nothrow(size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
