// LoraPool (G29) over the tiny preset's adapters: least-recently-used eviction within --max-loras,
// adapters in use never evicted (a full pool refuses with LoraPoolFull), evicted adapters reloaded
// with the same weights, the rank limit and bad names refused, unloading an adapter in use leaving
// its holders intact, and load/unload/acquire from several threads at once (run under tsan too).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "lemma/engine/lora_pool.h"
#include "lemma/model/model.h"
#include "lora_golden_files.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

class LoraPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    files_ = ensure_lora_adapters("tiny", why);
    if (!files_) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
    config_ = Model::open(files_->base.hf_dir).config();
  }
  std::filesystem::path dir(const char* adapter) const { return files_->adapters / adapter; }

  std::optional<LoraFiles> files_;
  ModelConfig config_;
};

TEST_F(LoraPoolTest, EvictsLeastRecentlyUsedAndReloads) {
  LoraPool pool(config_, {.max_loras = 2, .max_lora_rank = 64});
  pool.load("a", dir("lora-a"));
  pool.load("b", dir("lora-b"));
  EXPECT_EQ(pool.num_live(), 2);
  const uint64_t a_id = pool.acquire("a")->id;  // a is now the most recently used; b the least
  pool.load("c", dir("lora-c"));                 // evicts b
  const auto listed = pool.list();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_TRUE(listed[0].resident);   // a
  EXPECT_FALSE(listed[1].resident);  // b
  EXPECT_TRUE(listed[2].resident);   // c
  EXPECT_EQ(pool.num_live(), 2);
  EXPECT_EQ(pool.acquire("a")->id, a_id) << "a resident adapter is not reloaded";
  const auto b = pool.acquire("b");  // reloaded from its directory, evicting c (a was used later)
  EXPECT_EQ(b->rank, 16);
  EXPECT_EQ(b->name, "b");
  EXPECT_FALSE(pool.list()[2].resident);
  // The reload has the same weights as a fresh load.
  const LoraAdapter fresh = load_lora_adapter(dir("lora-b"), config_);
  const auto* m = b->find(1, LoraTarget::kDown);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(std::vector<float>(m->bt.as<float>(), m->bt.as<float>() + m->bt.elements()),
            std::vector<float>(fresh.find(1, LoraTarget::kDown)->bt.as<float>(),
                               fresh.find(1, LoraTarget::kDown)->bt.as<float>() + m->bt.elements()));
}

TEST_F(LoraPoolTest, AdaptersInUseAreNeverEvicted) {
  LoraPool pool(config_, {.max_loras = 2, .max_lora_rank = 64});
  pool.load("a", dir("lora-a"));
  pool.load("b", dir("lora-b"));
  pool.load("c", dir("lora-c"));  // evicts a (least recently used)
  auto held_b = pool.acquire("b");
  auto held_c = pool.acquire("c");
  EXPECT_THROW(pool.acquire("a"), LoraPoolFull);
  held_b.reset();  // b's request ended: it may go now
  const auto a = pool.acquire("a");
  EXPECT_EQ(a->name, "a");
  EXPECT_FALSE(pool.list()[1].resident);
}

TEST_F(LoraPoolTest, UnloadInUseKeepsTheHoldersWeightsAndTheBound) {
  LoraPool pool(config_, {.max_loras = 2, .max_lora_rank = 64});
  pool.load("a", dir("lora-a"));
  auto held = pool.acquire("a");
  pool.unload("a");
  EXPECT_FALSE(pool.contains("a"));
  EXPECT_THROW(pool.acquire("a"), LoraNotFound);
  EXPECT_EQ(held->find(0, LoraTarget::kQ)->rank, 8) << "the holder's weights are intact";
  EXPECT_EQ(pool.num_live(), 1) << "the unloaded adapter still in use counts toward --max-loras";
  pool.load("b", dir("lora-b"));
  auto held_b = pool.acquire("b");
  pool.load("c", dir("lora-c"));  // registered, but no slot free while a and b are in use
  EXPECT_THROW(pool.acquire("c"), LoraPoolFull);
  held.reset();
  EXPECT_EQ(pool.acquire("c")->name, "c");
  EXPECT_THROW(pool.unload("a"), LoraNotFound);
}

TEST_F(LoraPoolTest, RefusesBadRequests) {
  LoraPool pool(config_, {.max_loras = 4, .max_lora_rank = 8});
  try {
    pool.load("b", dir("lora-b"));
    ADD_FAILURE() << "rank 16 above the limit of 8 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 16, above the limit of 8"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(pool.contains("b"));
  pool.load("a", dir("lora-a"));
  EXPECT_THROW(pool.load("a", dir("lora-c")), InvalidArgument);
  EXPECT_THROW(pool.load("", dir("lora-c")), InvalidArgument);
  EXPECT_THROW(pool.load("x", dir("no-such-adapter")), IoError);
  EXPECT_THROW(pool.acquire("x"), LoraNotFound);
  EXPECT_THROW(LoraPool(config_, {.max_loras = 0, .max_lora_rank = 8}), InvalidArgument);
  EXPECT_THROW(parse_lora_module("no-equals"), InvalidArgument);
  EXPECT_EQ(parse_lora_module("n=/p/q").first, "n");
}

TEST_F(LoraPoolTest, ConcurrentLoadUnloadAcquire) {
  LoraPool pool(config_, {.max_loras = 3, .max_lora_rank = 64});
  pool.load("a", dir("lora-a"));
  pool.load("b", dir("lora-b"));
  std::atomic<bool> stop{false};
  std::atomic<int> acquired{0}, bad{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 3; ++t)
    users.emplace_back([&, t] {
      const char* names[] = {"a", "b", "c"};
      for (int i = 0; !stop; ++i) {
        try {
          const auto a = pool.acquire(names[(i + t) % 3]);
          if (a->name != names[(i + t) % 3] || a->find(0, LoraTarget::kQ) == nullptr) ++bad;
          ++acquired;
        } catch (const LoraNotFound&) {  // c between unload and load
        } catch (const LoraPoolFull&) {
        }
      }
    });
  for (int i = 0; i < 20; ++i) {
    pool.load("c", dir("lora-c"));
    pool.unload("c");
  }
  // On a busy machine the users may not have run at all yet: let them acquire before stopping.
  for (int i = 0; i < 10000 && acquired.load() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  for (auto& u : users) u.join();
  EXPECT_EQ(bad, 0);
  EXPECT_GT(acquired, 0);
  EXPECT_LE(pool.num_live(), 3);
}

}  // namespace
}  // namespace lemma::testing
