// Test helper: runs fn(rank's communicator) on one thread per rank of a new ThreadCommunicator group
// and returns what each rank threw (empty string: it returned).
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "lemma/dist/thread_communicator.h"

namespace lemma::testing {

inline std::vector<std::string> run_ranks(int size, const std::function<void(dist::Communicator&)>& fn,
                                          const dist::ThreadGroupOptions& options = {}) {
  auto comms = dist::ThreadCommunicator::create_group(size, options);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(*comms[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

}  // namespace lemma::testing
