// Post-processor: the special ids wrapped around a single encoded sequence when add_special is
// set (HF TemplateProcessing / RobertaProcessing / BertProcessing; GGUF add_bos/add_eos).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lemma/tokenizer/vocab.h"

namespace lemma::tok {

struct PostProcessor {
  std::vector<int32_t> prefix;  // before the sequence, e.g. {BOS}
  std::vector<int32_t> suffix;  // after it, e.g. {EOS}
};

// null or a processor that adds nothing (ByteLevel) -> empty. Throws Unsupported otherwise.
PostProcessor post_processor_from_json(const nlohmann::json& j, const Vocab& vocab);

}  // namespace lemma::tok
