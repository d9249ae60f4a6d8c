#include "lemma/tokenizer/post_processor.h"

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"

namespace lemma::tok {

using json = nlohmann::json;

PostProcessor post_processor_from_json(const json& j, const Vocab& vocab) {
  PostProcessor pp;
  if (j.is_null()) return pp;
  const std::string type = j.value("type", "");
  if (type == "ByteLevel") return pp;
  if (type == "Sequence") {
    for (const auto& s : j.at("processors")) {
      auto sub = post_processor_from_json(s, vocab);
      pp.prefix.insert(pp.prefix.end(), sub.prefix.begin(), sub.prefix.end());
      pp.suffix.insert(pp.suffix.end(), sub.suffix.begin(), sub.suffix.end());
    }
    return pp;
  }
  if (type == "TemplateProcessing") {
    const auto& specials = j.value("special_tokens", json::object());
    bool seen_sequence = false;
    for (const auto& item : j.at("single")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      const std::string name = item.at("SpecialToken").at("id").get<std::string>();
      std::vector<int32_t> ids;
      if (specials.contains(name)) {
        ids = specials.at(name).at("ids").get<std::vector<int32_t>>();
      } else if (auto id = vocab.find(name)) {
        ids.push_back(*id);
      } else {
        fail<FormatError>("tokenizer.json TemplateProcessing names unknown token '{}'", name);
      }
      auto& dst = seen_sequence ? pp.suffix : pp.prefix;
      dst.insert(dst.end(), ids.begin(), ids.end());
    }
    return pp;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    pp.prefix.push_back(j.at("cls").at(1).get<int32_t>());
    pp.suffix.push_back(j.at("sep").at(1).get<int32_t>());
    return pp;
  }
  fail<Unsupported>("tokenizer.json post_processor type '{}' is not supported", type);
}

}  // namespace lemma::tok
