#include "lemma/sched/request.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace lemma {
namespace {

TEST(RequestStatus, FinishedStatesSortAfterLiveOnes) {
  for (auto s : {RequestStatus::kWaiting, RequestStatus::kRunning, RequestStatus::kPreempted, RequestStatus::kSwapped}) {
    EXPECT_FALSE(is_finished(s)) << to_string(s);
    EXPECT_EQ(finish_reason(s), "");
  }
  for (auto s : {RequestStatus::kFinishedStopped, RequestStatus::kFinishedLength, RequestStatus::kFinishedCancelled,
                 RequestStatus::kFinishedTimeout, RequestStatus::kFinishedFailed}) {
    EXPECT_TRUE(is_finished(s)) << to_string(s);
    EXPECT_GT(s, RequestStatus::kSwapped);
  }
  EXPECT_EQ(finish_reason(RequestStatus::kFinishedStopped), "stop");
  EXPECT_EQ(finish_reason(RequestStatus::kFinishedLength), "length");
  EXPECT_EQ(finish_reason(RequestStatus::kFinishedCancelled), "abort");
  EXPECT_EQ(finish_reason(RequestStatus::kFinishedTimeout), "abort");
  EXPECT_EQ(finish_reason(RequestStatus::kFinishedFailed), "error");
  EXPECT_EQ(to_string(RequestStatus::kFinishedTimeout), "finished_timeout");
}

TEST(StopConditions, EosStopIdsMinAndMaxTokens) {
  StopConditions stop;
  stop.max_tokens = 4;
  stop.eos_token_id = 2;
  stop.stop_token_ids = {7};
  const std::vector<int32_t> eos{5, 2}, stop_id{7}, plain{5, 6};
  EXPECT_EQ(check_stop(stop, eos, 10, 100), RequestStatus::kFinishedStopped);
  EXPECT_EQ(check_stop(stop, stop_id, 10, 100), RequestStatus::kFinishedStopped);
  EXPECT_EQ(check_stop(stop, plain, 10, 100), std::nullopt);
  EXPECT_EQ(check_stop(stop, plain, 100, 100), RequestStatus::kFinishedLength);  // context limit
  const std::vector<int32_t> four{5, 6, 5, 6};
  EXPECT_EQ(check_stop(stop, four, 10, 100), RequestStatus::kFinishedLength);
  stop.ignore_eos = true;
  EXPECT_EQ(check_stop(stop, eos, 10, 100), std::nullopt);
  stop.ignore_eos = false;
  stop.min_tokens = 3;
  EXPECT_EQ(check_stop(stop, eos, 10, 100), std::nullopt);
  EXPECT_EQ(check_stop(stop, std::vector<int32_t>{}, 10, 100), std::nullopt);
}

TEST(Request, TokensChangeOnlyByAppending) {
  Request r(7, {1, 2, 3});
  EXPECT_EQ(r.num_prompt_tokens(), 3);
  EXPECT_EQ(r.num_output_tokens(), 0);
  const std::vector<int32_t> out{9, 8};
  r.append_output_tokens(out);
  EXPECT_EQ(r.num_tokens(), 5);
  EXPECT_EQ(std::vector<int32_t>(r.output_token_ids().begin(), r.output_token_ids().end()), out);
  EXPECT_EQ(std::vector<int32_t>(r.prompt_token_ids().begin(), r.prompt_token_ids().end()),
            (std::vector<int32_t>{1, 2, 3}));
  r.set_num_computed_tokens(5);
  EXPECT_THROW(r.set_num_computed_tokens(6), std::logic_error);
  EXPECT_EQ(r.status(), RequestStatus::kWaiting);
}

}  // namespace
}  // namespace lemma
