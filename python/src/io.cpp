// cannl::io and GPT-2: checkpoints (named nodes of a context saved to / restored from a
// safetensors file), reading safetensors files, the GPT-2 model, its sampler and tokenizer.
//
//   entries = cannl.io.checkpoint_entries("model", [loss])
//   cannl.io.save_checkpoint(step.ctx, entries, "ckpt.safetensors")
//   model = cannl.nn.Gpt2(cannl.nn.find_gpt2_config("model.safetensors"), ctx, window=32)
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "cannl/io/bpe_tokenizer.h"
#include "cannl/io/checkpoint.h"
#include "cannl/io/safetensors.h"
#include "cannl/nn/gpt2.h"

namespace cannl::python {
namespace {

/// A float64 NumPy array owning `values`: [rows, cols], or [cols] when rows is 0.
nb::ndarray<nb::numpy, double> owned_matrix(std::vector<double> values, std::size_t rows, std::size_t cols) {
  auto* held = new std::vector<double>(std::move(values));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  const std::size_t shape[2] = {rows, cols};
  return nb::ndarray<nb::numpy, double>(held->data(), rows == 0 ? 1 : 2, rows == 0 ? shape + 1 : shape, owner);
}

void bind_checkpoints(nb::module_& m) {
  nb::class_<io::CheckpointEntry>(m, "CheckpointEntry", "One node under its name in a checkpoint file.")
      .def(nb::init<std::string, ir::NodeRef>(), nb::arg("name"), nb::arg("node"))
      .def_rw("name", &io::CheckpointEntry::name)
      .def_rw("node", &io::CheckpointEntry::node)
      .def("__repr__", [](const io::CheckpointEntry& e) { return "<cannl.io.CheckpointEntry '" + e.name + "'>"; });
  m.def("checkpoint_entries",
        [](const std::string& name_space, const std::vector<Tensor>& roots, const std::vector<ir::NodeRef>& extra) {
          return io::checkpoint_entries(name_space, roots, extra);
        }, nb::arg("name_space"), nb::arg("roots"), nb::arg("extra") = std::vector<ir::NodeRef>{}, kLocked,
        "Entries for the roots' parameters and extra nodes, named name_space/label.");
  m.def("save_checkpoint",
        [](const runtime::Context& ctx, const std::vector<io::CheckpointEntry>& entries,
           const std::filesystem::path& path, const std::map<std::string, std::string>& metadata) {
          io::save_checkpoint(ctx, entries, path, metadata);
        }, nb::arg("ctx"), nb::arg("entries"), nb::arg("path"),
        nb::arg("metadata") = std::map<std::string, std::string>{}, kReleased,
        "Writes the entries' values atomically (bit for bit) as a safetensors file.");
  m.def("restore_checkpoint",
        [](runtime::Context& ctx, const std::vector<io::CheckpointEntry>& entries, const std::filesystem::path& path) {
          io::restore_checkpoint(ctx, entries, path);
        }, nb::arg("ctx"), nb::arg("entries"), nb::arg("path"), kReleased,
        "Uploads each entry's stored bytes; on a FormatError the context is unchanged.");
}

void bind_safetensors(nb::module_& m) {
  nb::class_<io::SafetensorsFile>(m, "SafetensorsFile", "An open, validated safetensors file (memory-mapped).")
      .def_static("open", &io::SafetensorsFile::open, nb::arg("path"), kReleased)
      .def_prop_ro("name", &io::SafetensorsFile::name)
      .def("keys", [](const io::SafetensorsFile& f) {
             std::vector<std::string> names;
             for (const auto& t : f.tensors()) names.push_back(t.name);
             return names;
           }, "Tensor names in file order.")
      .def("shape", [](const io::SafetensorsFile& f, std::string_view name) { return f.info(name).shape; },
           nb::arg("name"), kLocked)
      .def("metadata", &io::SafetensorsFile::metadata)
      .def("numpy", [](const io::SafetensorsFile& f, std::string_view name) {
             const auto& shape = f.info(name).shape;
             auto* held = new std::vector<double>(f.to_f64(name));
             nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
             std::vector<std::size_t> dims(shape.begin(), shape.end());
             return nb::ndarray<nb::numpy, double>(held->data(), dims.size(), dims.data(), owner);
           }, nb::arg("name"), kLocked, "A tensor's values as float64.");
}

void bind_gpt2(nb::module_& m) {
  nb::class_<nn::Gpt2Config>(m, "Gpt2Config", "GPT-2's hyperparameters (Hugging Face names); 124M defaults.")
      .def("__init__", [](nn::Gpt2Config* self, std::int64_t vocab_size, std::int64_t n_positions,
                          std::int64_t n_embd, std::int64_t n_layer, std::int64_t n_head, double eps,
                          ir::DType accumulate) {
             new (self) nn::Gpt2Config{vocab_size, n_positions, n_embd, n_layer, n_head, eps, accumulate};
           }, nb::kw_only(), nb::arg("vocab_size") = 50257, nb::arg("n_positions") = 1024, nb::arg("n_embd") = 768,
           nb::arg("n_layer") = 12, nb::arg("n_head") = 12, nb::arg("layer_norm_epsilon") = 1e-5,
           nb::arg("accumulate") = ir::DType::F64)
      .def_rw("vocab_size", &nn::Gpt2Config::vocab_size).def_rw("n_positions", &nn::Gpt2Config::n_positions)
      .def_rw("n_embd", &nn::Gpt2Config::n_embd).def_rw("n_layer", &nn::Gpt2Config::n_layer)
      .def_rw("n_head", &nn::Gpt2Config::n_head).def_rw("layer_norm_epsilon", &nn::Gpt2Config::layer_norm_epsilon)
      .def_rw("accumulate", &nn::Gpt2Config::accumulate)
      .def("describe", &nn::Gpt2Config::describe)
      .def("__repr__", [](const nn::Gpt2Config& c) { return "<cannl.nn.Gpt2Config " + c.describe() + ">"; });
  m.def("parse_gpt2_config", &nn::parse_gpt2_config, nb::arg("json_text"), nb::arg("origin") = "<string>", kLocked);
  m.def("read_gpt2_config", &nn::read_gpt2_config, nb::arg("path"), kLocked);
  m.def("find_gpt2_config", &nn::find_gpt2_config, nb::arg("weights") = nb::none(), nb::arg("config") = nb::none(),
        kLocked, "config when given, else config.json beside the weights, else the 124M values.");
  nb::class_<nn::Gpt2>(m, "Gpt2", "GPT-2's forward compiled over a fixed window of positions.")
      .def(nb::init<const nn::Gpt2Config&, runtime::Context, std::int64_t, const std::string&>(),
           nb::arg("config"), nb::arg("ctx"), nb::arg("window"), nb::arg("label") = "gpt2", kReleased,
           "Builds the graph and compiles the forward routine (GIL released); weights still unset.")
      .def("load_weights", [](nn::Gpt2& g, const std::filesystem::path& path) {
             g.load_weights(io::SafetensorsFile::open(path));
           }, nb::arg("path"), kReleased, "Uploads a Hugging Face safetensors checkpoint.")
      .def("load_weights", &nn::Gpt2::load_weights, nb::arg("file"), kReleased)
      .def("randomize_weights", &nn::Gpt2::randomize_weights, nb::arg("seed") = 0, kReleased)
      .def("logits", [](nn::Gpt2& g, const std::vector<std::int64_t>& ids) {
             std::vector<double> values;
             {
               Released released;
               values = g.logits(ids);
             }
             return owned_matrix(std::move(values), ids.size(), static_cast<std::size_t>(g.config().vocab_size));
           }, nb::arg("ids"), "Logits [len(ids), vocab_size] as float64.")
      .def("last_logits", [](nn::Gpt2& g, const std::vector<std::int64_t>& ids) {
             std::vector<double> values;
             {
               Released released;
               values = g.last_logits(ids);
             }
             const std::size_t cols = values.size();
             return owned_matrix(std::move(values), 0, cols);
           }, nb::arg("ids"), "The logits of the last position only.")
      .def_prop_ro("config", &nn::Gpt2::config)
      .def_prop_ro("window", &nn::Gpt2::window);
  m.def("generate",
        [](nn::Gpt2& model, std::vector<std::int64_t> prompt, std::int64_t n_tokens, bool greedy, std::int64_t top_k,
           double temperature, std::uint64_t seed) {
          return nn::generate(model, std::move(prompt), n_tokens, {greedy, top_k, temperature, seed});
        }, nb::arg("model"), nb::arg("prompt"), nb::arg("n_tokens"), nb::kw_only(), nb::arg("greedy") = true,
        nb::arg("top_k") = 0, nb::arg("temperature") = 1.0, nb::arg("seed") = 0, kReleased,
        "Appends n_tokens tokens (greedy, or sampled with top_k / temperature from a seeded\n"
        "generator); returns the new tokens only.");
}

void bind_tokenizer(nb::module_& m) {
  nb::class_<io::BpeTokenizer>(m, "BpeTokenizer", "GPT-2's byte-level BPE tokenizer.")
      .def_static("from_directory", &io::BpeTokenizer::from_directory, nb::arg("dir"), kReleased,
                  "Loads encoder.json and vocab.bpe (data/gpt2-bpe in the repository).")
      .def_static("from_files", &io::BpeTokenizer::from_files, nb::arg("encoder_json"), nb::arg("vocab_bpe"), kReleased)
      .def("encode", [](const io::BpeTokenizer& t, nb::bytes text) {
             return t.encode(std::string_view(text.c_str(), text.size()));
           }, nb::arg("text"), kLocked)
      .def("encode", [](const io::BpeTokenizer& t, const std::string& text) { return t.encode(text); },
           nb::arg("text"), kLocked, "Token ids of the text's UTF-8 bytes.")
      .def("decode", [](const io::BpeTokenizer& t, const std::vector<io::TokenId>& ids) {
             const std::string bytes = t.decode(ids);
             return nb::bytes(bytes.data(), bytes.size());
           }, nb::arg("ids"), kLocked, "The bytes the ids stand for (decode them as UTF-8).")
      .def_prop_ro("vocab_size", &io::BpeTokenizer::vocab_size);
}

}  // namespace

void bind_io(nb::module_& m) {
  bind_checkpoints(m);
  bind_safetensors(m);
  bind_gpt2(m);
  bind_tokenizer(m);
}

}  // namespace cannl::python
