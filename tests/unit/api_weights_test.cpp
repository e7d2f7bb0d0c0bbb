// kiln::Weights (include/kiln/kiln.h): a safetensors file mapped, its tensors passed to run()
// as they lie in the mapping, checked against a composite's inputs, and one clear error per bad
// file or mismatch. Only the public header: the file is written byte by byte here.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using Sizes = std::map<std::string, int64_t>;

/** Writes a safetensors file: `header` JSON, padded to 8 bytes, then `data`. */
std::string write_file(const std::string& name, std::string header,
                       const std::vector<uint8_t>& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream out(path, std::ios::binary);
  for (int b = 0; b < 8; ++b)
    out.put(static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * b)));
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return path;
}

}  // namespace

TEST_CASE("api: Weights maps a safetensors file; its tensors run as they lie in it") {
  // b: f32[3, 2] = 0..5, then a bf16 tensor and an empty one.
  std::vector<uint8_t> data(24 + 4);
  for (int k = 0; k < 6; ++k) {
    const float v = static_cast<float>(k);
    std::memcpy(&data[4 * k], &v, 4);
  }
  const std::string path = write_file(
      "kiln_api_weights.safetensors",
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]},)"
      R"("h.bf":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},)"
      R"("none":{"dtype":"I8","shape":[0],"data_offsets":[28,28]}})",
      data);
  kiln::Weights w = kiln::Weights::open(path);
  CHECK(w.names() == std::vector<std::string>{"b", "h.bf", "none"});
  CHECK(w.has("h.bf"));
  CHECK_FALSE(w.has("c"));
  CHECK(w.dtype("b") == "f32");
  CHECK(w.dtype("h.bf") == "bf16");
  CHECK(w.shape("b") == std::vector<int64_t>{3, 2});
  CHECK(w.byte_size("b") == 24);
  CHECK(w.metadata().at("format") == "pt");
  CHECK(static_cast<const float*>(w.data("b"))[5] == 5.0f);

  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::Compiled matmul = kiln::compile(spec, "matmul", "interp");
  // b's shape binds K and N; M is the caller's.
  Sizes sizes = w.bind(matmul, "b");
  CHECK(sizes == Sizes{{"K", 3}, {"N", 2}});
  sizes["M"] = 2;
  const std::vector<float> a = {1, 0, 0, 0, 1, 1};  // rows: e0, e1 + e2
  std::vector<float> y(4);
  matmul.run({const_cast<float*>(a.data()), const_cast<void*>(w.data("b")), y.data()}, sizes);
  CHECK(y == std::vector<float>{0, 1, 6, 8});

  // Mismatches name the file, the tensor and the input.
  CHECK_THROWS_WITH_AS(w.bind(matmul, "a", "h.bf"),
                       doctest::Contains("tensor 'h.bf' for input 'a' of 'matmul': the input is "
                                         "f32, the file holds bf16"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(w.bind(matmul, "y", "b", {{"M", 3}, {"N", 7}}),
                       doctest::Contains("N = 7, but the file has 2 there"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(w.bind(matmul, "a", "none"), doctest::Contains("the input is f32"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(w.data("c"), doctest::Contains("no tensor named 'c'"),
                       std::invalid_argument);
  // A moved Weights keeps the mapping.
  kiln::Weights v = std::move(w);
  CHECK(static_cast<const float*>(v.data("b"))[1] == 1.0f);
  std::filesystem::remove(path);

  // A bad file is one std::runtime_error naming it.
  const std::string cut = write_file("kiln_api_weights_cut.safetensors",
                                     R"({"b":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]}})",
                                     std::vector<uint8_t>(20));
  CHECK_THROWS_WITH_AS(
      kiln::Weights::open(cut),
      doctest::Contains((cut + ": tensor 'b': data offsets [0, 24) reach past").c_str()),
      std::runtime_error);
  std::filesystem::remove(cut);
}
