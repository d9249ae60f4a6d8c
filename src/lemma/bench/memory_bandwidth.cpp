#include "lemma/bench/memory_bandwidth.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "lemma/base/error.h"
#include "lemma/bench/pinned_threads.h"
#include "lemma/bench/x86/probes.h"
#include "lemma/kernels/isa.h"

namespace lemma::bench {

namespace {
constexpr uint64_t kSliceAlign = 256;
constexpr size_t kHugePage = size_t{2} << 20;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
}  // namespace

BandwidthResult measure_read_bandwidth(const BandwidthOptions& options) {
  if (options.num_threads < 1 || options.passes < 1) {
    throw InvalidArgument("bandwidth probe needs >= 1 thread and >= 1 pass");
  }
  const uint64_t threads = static_cast<uint64_t>(options.num_threads);
  const uint64_t slice = options.bytes / threads / kSliceAlign * kSliceAlign;
  if (slice == 0) {
    throw InvalidArgument("bandwidth buffer of " + std::to_string(options.bytes) + " bytes is too small for " +
                          std::to_string(threads) + " threads");
  }
  const uint64_t total = slice * threads;
  const size_t allocated = (total + kHugePage - 1) / kHugePage * kHugePage;
  std::unique_ptr<void, FreeDeleter> buffer(std::aligned_alloc(kHugePage, allocated));
  if (!buffer) throw Error("cannot allocate " + std::to_string(allocated) + " bytes for the bandwidth probe");
  madvise(buffer.get(), allocated, MADV_HUGEPAGE);  // fewer TLB misses where THP is on; harmless otherwise

  const bool use_avx2 = kernels::cpu_features().avx2;
  auto* base = static_cast<unsigned char*>(buffer.get());
  std::atomic<uint64_t> sink{0};  // the sums land here, so the loads are never dead code
  ParallelPasses job;
  job.num_threads = options.num_threads;
  job.passes = options.passes;
  // Each thread writes its own slice first: real pages (not the shared zero page), local to it.
  job.setup = [&](int t) { std::memset(base + slice * static_cast<uint64_t>(t), 0x5a + t, slice); };
  job.body = [&](int t) {
    const void* p = base + slice * static_cast<uint64_t>(t);
    const uint64_t s = use_avx2 ? x86::read_sum_avx2(p, slice) : x86::read_sum_scalar(p, slice);
    sink.fetch_add(s, std::memory_order_relaxed);
  };
  const std::vector<double> seconds = run_parallel_passes(job);

  BandwidthResult result;
  result.bytes_per_pass = total;
  result.loop = use_avx2 ? "avx2" : "scalar";
  for (double s : seconds) {
    const double gbps = static_cast<double>(total) / 1e9 / s;
    result.pass_gbps.push_back(gbps);
    if (gbps > result.best_gbps) result.best_gbps = gbps;
  }
  return result;
}

}  // namespace lemma::bench
