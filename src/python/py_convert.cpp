#include "py_convert.h"

#include <pybind11/stl.h>

#include "lemma/base/error.h"

namespace py = pybind11;

namespace lemma::python {

namespace {

template <typename T>
void read(const py::dict& d, const char* key, T& out) {
  if (d.contains(key) && !d[key].is_none()) out = d[key].cast<T>();
}

std::string token_text(const Tokenizer& tokenizer, int32_t id) {
  if (id < 0 || id >= tokenizer.vocab_size()) return {};
  const int32_t ids[] = {id};
  return tokenizer.decode(ids, /*skip_special=*/false);
}

py::object logprobs_to_python(const ChoiceSnapshot& c, const Tokenizer& tokenizer) {
  if (!c.logprobs_requested) return py::none();
  py::list per_token;
  for (size_t i = 0; i < c.logprobs.size(); ++i) {
    const SampleResult& r = c.logprobs[i];
    py::dict entries;
    for (size_t rank = 0; rank < r.top.size(); ++rank)
      entries[py::int_(r.top[rank].token)] =
          py::make_tuple(r.top[rank].logprob, rank + 1, token_text(tokenizer, r.top[rank].token));
    const int32_t sampled = i < c.token_ids.size() ? c.token_ids[i] : r.token;
    if (!entries.contains(py::int_(sampled)))
      entries[py::int_(sampled)] = py::make_tuple(r.logprob, py::none(), token_text(tokenizer, sampled));
    per_token.append(std::move(entries));
  }
  return per_token;
}

}  // namespace

LlmOptions llm_options_from(const std::string& model, const py::dict& d) {
  LlmOptions o;
  o.model = model;
  read(d, "load", o.load);
  read(d, "kv_cache_dtype", o.kv_cache_dtype);
  read(d, "isa", o.isa);
  read(d, "matmul_precision", o.matmul_precision);
  read(d, "interleave", o.interleave);
  read(d, "decode_plans", o.decode_plans);
  read(d, "pin_threads", o.pin_threads);
  read(d, "threads", o.threads);
  read(d, "max_num_seqs", o.max_num_seqs);
  read(d, "max_num_batched_tokens", o.max_num_batched_tokens);
  read(d, "max_model_len", o.max_model_len);
  read(d, "kv_cache_tokens", o.kv_cache_tokens);
  read(d, "block_size", o.block_size);
  read(d, "enable_prefix_caching", o.enable_prefix_caching);
  read(d, "seed", o.seed);
  return o;
}

OfflineRequestParams request_params_from(const py::dict& d) {
  OfflineRequestParams p;
  SamplingParams& s = p.sampling;
  read(d, "temperature", s.temperature);
  read(d, "top_p", s.top_p);
  read(d, "top_k", s.top_k);
  if (s.top_k < 0) s.top_k = 0;  // vLLM's -1: off
  read(d, "min_p", s.min_p);
  read(d, "repetition_penalty", s.repetition_penalty);
  read(d, "presence_penalty", s.presence_penalty);
  read(d, "frequency_penalty", s.frequency_penalty);
  if (d.contains("seed") && !d["seed"].is_none()) s.seed = d["seed"].cast<uint64_t>();
  if (d.contains("logprobs") && !d["logprobs"].is_none()) {
    s.logprobs = true;
    s.top_logprobs = d["logprobs"].cast<int32_t>();
  }
  if (d.contains("logit_bias") && !d["logit_bias"].is_none())
    for (auto [token, bias] : d["logit_bias"].cast<py::dict>())
      s.logit_bias.emplace_back(token.cast<int32_t>(), bias.cast<float>());
  read(d, "n", p.n);
  if (d.contains("max_tokens")) p.max_tokens = d["max_tokens"].is_none() ? std::nullopt : std::optional(d["max_tokens"].cast<int64_t>());
  read(d, "min_tokens", p.min_tokens);
  read(d, "stop", p.stop);
  read(d, "stop_token_ids", p.stop_token_ids);
  read(d, "ignore_eos", p.ignore_eos);
  read(d, "skip_special_tokens", p.skip_special_tokens);
  return p;
}

py::tuple to_python(const OutputSnapshot& snapshot, const Tokenizer& tokenizer) {
  py::list choices;
  for (const ChoiceSnapshot& c : snapshot.choices) {
    py::object reason = py::none();
    if (c.finished) reason = py::str(std::string(finish_reason(*c.finished)));
    py::object cumulative = c.cumulative_logprob ? py::object(py::float_(*c.cumulative_logprob)) : py::none();
    py::object stop_reason = py::none();
    if (c.stop_string) stop_reason = py::bytes(*c.stop_string).attr("decode")("utf-8", "replace");
    else if (c.stop_token) stop_reason = py::int_(*c.stop_token);
    choices.append(py::make_tuple(c.index, py::bytes(c.text).attr("decode")("utf-8", "replace"), c.token_ids,
                                  logprobs_to_python(c, tokenizer), cumulative, reason, stop_reason, c.error));
  }
  return py::make_tuple(snapshot.prompt_token_ids, choices, snapshot.finished);
}

}  // namespace lemma::python
