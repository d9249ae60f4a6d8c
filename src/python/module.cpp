// The `lemma._lemma` extension: an Engine class over OfflineEngine for the pure-Python `lemma`
// package (LLM, SamplingParams, RequestOutput live in lemma/*.py). Every call that runs the model
// (loading, stepping) releases the GIL; a mutex per engine serialises engine access, taken only
// while the GIL is released, so Python threads sharing one LLM batch together instead of deadlocking.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <utility>

#include "lemma/base/error.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "offline_engine.h"
#include "output_snapshot.h"
#include "py_convert.h"

namespace py = pybind11;

namespace lemma::python {

namespace {

class PyEngine {
 public:
  PyEngine(const std::string& model, const py::dict& options) {
    const LlmOptions o = llm_options_from(model, options);
    py::gil_scoped_release release;
    engine_ = std::make_unique<OfflineEngine>(o);
  }

  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens) const {
    return add_special_tokens ? engine_->encode_prompt(text)
                              : engine_->tokenizer().encode(text, /*add_special=*/false, /*parse_special=*/false);
  }
  py::str decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    return py::bytes(engine_->tokenizer().decode(ids, skip_special_tokens)).attr("decode")("utf-8", "replace");
  }
  py::tuple chat_prompt(const std::string& messages_json, bool add_generation_prompt,
                        const std::optional<std::string>& chat_template) const {
    nlohmann::ordered_json messages;
    try {
      messages = nlohmann::ordered_json::parse(messages_json);
    } catch (const nlohmann::json::exception& e) {
      fail<InvalidArgument>("messages are not JSON-serialisable: {}", e.what());
    }
    OfflineEngine::ChatPrompt p = engine_->chat_prompt(messages, add_generation_prompt, chat_template);
    return py::make_tuple(py::bytes(p.text).attr("decode")("utf-8", "replace"), p.token_ids);
  }

  // Queues every prompt before any step, so they are batched together; nothing is queued when one fails.
  std::vector<RequestId> add_requests(const std::vector<std::vector<int32_t>>& prompts, const py::list& params) {
    if (params.size() != prompts.size()) fail<InvalidArgument>("{} prompts but {} parameter sets", prompts.size(), params.size());
    std::vector<OfflineRequestParams> converted;
    for (const py::handle p : params) converted.push_back(request_params_from(p.cast<py::dict>()));
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    std::vector<RequestId> ids;
    try {
      for (size_t i = 0; i < prompts.size(); ++i) ids.push_back(engine_->add_request(prompts[i], converted[i]));
    } catch (...) {
      for (RequestId id : ids) engine_->take(id);
      throw;
    }
    return ids;
  }

  // Steps the engine until every request in `ids` has finished, then removes and returns them.
  py::list run(const std::vector<RequestId>& ids) {
    std::vector<OutputSnapshot> done;
    {
      py::gil_scoped_release release;
      for (;;) {
        std::lock_guard lock(mutex_);
        bool all_finished = true;
        for (RequestId id : ids) all_finished = all_finished && engine_->request(id).finished();
        if (all_finished || !engine_->has_unfinished_requests()) {
          for (RequestId id : ids) done.push_back(full_snapshot(engine_->take(id)));
          break;
        }
        engine_->step();
      }
    }
    py::list out;
    for (const OutputSnapshot& s : done) out.append(to_python(s, engine_->tokenizer()));
    return out;
  }

  // Steps the engine until request `id` has something new, and returns that delta; a finished
  // request is removed once its last delta is returned.
  py::tuple next_delta(RequestId id) {
    OutputSnapshot delta;
    {
      py::gil_scoped_release release;
      for (;;) {
        std::lock_guard lock(mutex_);
        OfflineRequest& r = engine_->request(id);
        if (!r.finished() && !engine_->has_unfinished_requests()) {  // nothing left to run it: end it
          OfflineRequest ended = engine_->take(id);
          delta = take_delta(ended);
          break;
        }
        if (has_delta(r)) {
          delta = take_delta(r);
          if (delta.finished) engine_->take(id);
          break;
        }
        engine_->step();
      }
    }
    return to_python(delta, engine_->tokenizer());
  }

  // Ends a request early (a stream closed before its end); unknown ids are ignored.
  void abort(RequestId id) {
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    try {
      engine_->take(id);
    } catch (const InvalidArgument&) {
    }
  }

  // (engine has live requests, requests not yet taken): for tests that nothing is left behind.
  py::tuple pending() {
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    const bool live = engine_->has_unfinished_requests();
    const size_t held = engine_->num_requests();
    py::gil_scoped_acquire acquire;
    return py::make_tuple(live, held);
  }

  int64_t vocab_size() const { return engine_->tokenizer().vocab_size(); }
  int64_t max_model_len() const { return engine_->max_model_len(); }
  std::optional<int32_t> eos_token_id() const { return engine_->tokenizer().eos_id(); }
  std::optional<int32_t> bos_token_id() const { return engine_->tokenizer().bos_id(); }

 private:
  std::mutex mutex_;
  std::unique_ptr<OfflineEngine> engine_;
};

}  // namespace

}  // namespace lemma::python

PYBIND11_MODULE(_lemma, m) {
  using lemma::python::PyEngine;
  m.doc() = "lemma's C++ engine for the `lemma` Python package (use lemma.LLM)";
  // Typed lemma errors become the Python exceptions a caller expects; the message names the value.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const lemma::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const lemma::TemplateError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const lemma::Unsupported& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const lemma::FormatError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const lemma::IoError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const lemma::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  py::class_<PyEngine>(m, "Engine")
      .def(py::init<const std::string&, const py::dict&>(), py::arg("model"), py::arg("options"))
      .def("encode", &PyEngine::encode, py::arg("text"), py::arg("add_special_tokens") = true)
      .def("decode", &PyEngine::decode, py::arg("token_ids"), py::arg("skip_special_tokens") = true)
      .def("chat_prompt", &PyEngine::chat_prompt, py::arg("messages_json"), py::arg("add_generation_prompt"),
           py::arg("chat_template") = std::nullopt)
      .def("add_requests", &PyEngine::add_requests, py::arg("prompts"), py::arg("params"))
      .def("run", &PyEngine::run, py::arg("request_ids"))
      .def("next_delta", &PyEngine::next_delta, py::arg("request_id"))
      .def("abort", &PyEngine::abort, py::arg("request_id"))
      .def("pending", &PyEngine::pending)
      .def_property_readonly("vocab_size", &PyEngine::vocab_size)
      .def_property_readonly("max_model_len", &PyEngine::max_model_len)
      .def_property_readonly("eos_token_id", &PyEngine::eos_token_id)
      .def_property_readonly("bos_token_id", &PyEngine::bos_token_id);
}
