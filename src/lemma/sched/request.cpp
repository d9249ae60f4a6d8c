#include "lemma/sched/request.h"

#include <stdexcept>

#include <fmt/format.h>

namespace lemma {

Request::Request(RequestId id, std::vector<int32_t> prompt_token_ids, RequestOptions options)
    : id_(id), token_ids_(std::move(prompt_token_ids)), num_prompt_tokens_(token_ids_.size()),
      options_(std::move(options)) {}

void Request::append_output_tokens(std::span<const int32_t> token_ids) {
  token_ids_.insert(token_ids_.end(), token_ids.begin(), token_ids.end());
}

void Request::set_num_computed_tokens(int64_t n) {
  if (n < 0 || n > num_tokens())
    throw std::logic_error(fmt::format("Request {}: num_computed_tokens {} outside [0, {}]", id_, n, num_tokens()));
  num_computed_tokens_ = n;
}

}  // namespace lemma
