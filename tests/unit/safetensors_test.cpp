// ir/safetensors.h: files as the safetensors library writes them, round trips of every dtype
// through a mapped file, and one clear error per malformed or hostile file.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/safetensors.h"

using namespace kiln;

namespace {

/** A file of `header` (JSON text, unpadded) followed by `data`. */
std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> out(8);
  for (int b = 0; b < 8; ++b)
    out[b] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * b));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    parse_safetensors(bytes.data(), bytes.size(), "w.safetensors");
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

std::string write_temp(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

Tensor filled(DType t, std::vector<int64_t> dims, double start) {
  Tensor x(t, std::move(dims));
  for (size_t k = 0; k < x.numel(); ++k)
    x.set(k, t == DType::boolean ? static_cast<double>(k % 2) : start + static_cast<double>(k));
  return x;
}

}  // namespace

TEST_CASE("safetensors: a file as the safetensors library writes it") {
  // safetensors.numpy.save({"a": np.arange(6, dtype=np.float32).reshape(2, 3),
  //                         "b": np.array([1, -2], dtype=np.int16)}): names sorted, the data
  // of each in the order of the names, the header padded with spaces to 8 bytes.
  std::string header = R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                       R"("b":{"dtype":"I16","shape":[2],"data_offsets":[24,28]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::vector<uint8_t> data(28);
  for (int k = 0; k < 6; ++k) {
    const float v = static_cast<float>(k);
    std::memcpy(&data[4 * k], &v, 4);
  }
  const int16_t b[2] = {1, -2};
  std::memcpy(&data[24], b, 4);
  const std::string path = write_temp(file_of(header, data), "kiln_safetensors_lib.safetensors");
  SafetensorsFile f(path);
  REQUIRE(f.header().tensors.size() == 2);
  const SafetensorsEntry* a = f.find("a");
  REQUIRE(a);
  CHECK(a->dtype == DType::f32);
  CHECK(a->dims == std::vector<int64_t>{2, 3});
  Tensor ta = f.tensor(*a);
  CHECK(ta.at(5) == 5.0);
  CHECK(f.tensor(*f.find("b")).at(1) == -2.0);
  // The elements are the mapping's, not a copy.
  CHECK(std::memcmp(f.data(*a), data.data(), 24) == 0);
  CHECK(f.find("c") == nullptr);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: every dtype round-trips through a mapped file, with the metadata") {
  std::vector<std::pair<std::string, Tensor>> tensors;
  int k = 0;
  for (DType t : all_dtypes())
    tensors.emplace_back(std::string("t.") + std::string(dtype_name(t)),
                         filled(t, {2, 3}, is_unsigned_int(t) ? 1 : -2.5 + (k++)));
  tensors.emplace_back("scalar", filled(DType::f64, {}, 7));
  tensors.emplace_back("empty", Tensor(DType::f32, {0, 5}));
  const std::vector<uint8_t> bytes = safetensors_bytes(tensors, {{"format", "pt"}});
  const std::string path = write_temp(bytes, "kiln_safetensors_all.safetensors");
  SafetensorsFile f(path);
  CHECK(f.header().data_start % 8 == 0);
  CHECK(f.header().metadata.at("format") == "pt");
  REQUIRE(f.header().tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    CAPTURE(name);
    const SafetensorsEntry* e = f.find(name);
    REQUIRE(e);
    CHECK(e->dtype == t.dtype);
    CHECK(e->dims == t.dims);
    Tensor back = f.tensor(*e);
    REQUIRE(back.numel() == t.numel());
    for (size_t i = 0; i < t.numel(); ++i)
      CHECK(element_bits(back, i) == element_bits(t, i));
  }
  // Moved, the mapping goes with it.
  SafetensorsFile g = std::move(f);
  CHECK(g.tensor(*g.find("scalar")).at(0) == 7.0);
  std::filesystem::remove(path);

  // Every prefix of the file is one error, never a read past it.
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK(error_of(cut).rfind("w.safetensors: ", 0) == 0);
  }
}

TEST_CASE("safetensors: a malformed or hostile file is one error naming the file and the fault") {
  auto entry = [](const std::string& body) { return "{\"w\":{" + body + "}}"; };
  const std::string ok = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
  const std::vector<uint8_t> eight(8);
  CHECK(error_of(file_of(entry(ok), eight)).empty());

  CHECK(error_of({1, 2, 3}).find("3 bytes, shorter than the 8-byte length") != std::string::npos);
  std::vector<uint8_t> long_header = file_of("{}");
  long_header[0] = 200;
  CHECK(error_of(long_header).find("the header's length 200 is more than the file's 2 bytes") !=
        std::string::npos);
  std::vector<uint8_t> huge(8, 0xff);
  CHECK(error_of(huge).find("is more than the file's 0 bytes") != std::string::npos);
  CHECK(error_of(file_of("[1, 2]")).find("not a JSON object") != std::string::npos);
  CHECK(error_of(file_of("")).find("not a JSON object") != std::string::npos);
  CHECK(error_of(file_of("{\"w\": ")).find("the header is not JSON") != std::string::npos);
  CHECK(error_of(file_of("{} trailing")).find("the header is not JSON") != std::string::npos);
  CHECK(error_of(file_of("{\"w\":{\"x\":[[[[1]]]]}}")).find("nests deeper") != std::string::npos);
  CHECK(error_of(file_of("{\"w\": 1, \"w\": 2}")).find("names 'w' twice") != std::string::npos);
  CHECK(error_of(file_of("{\"w\": 1}")).find("tensor 'w': its entry is not an object") !=
        std::string::npos);
  CHECK(error_of(file_of(entry(R"("shape":[2],"data_offsets":[0,8])"), eight))
            .find("no \"dtype\" string") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8])"), eight))
            .find("dtype F8_E4M3 is not one Kiln has") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F32","data_offsets":[0,8])"), eight))
            .find("no \"shape\" array") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F32","shape":[-2],"data_offsets":[0,8])"), eight))
            .find("not a non-negative integer") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F32","shape":[2.0],"data_offsets":[0,8])"), eight))
            .find("not a non-negative integer") != std::string::npos);
  CHECK(error_of(
            file_of(entry(R"("dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8])"),
                    eight))
            .find("byte count overflows") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0])"), eight))
            .find("no \"data_offsets\" pair") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F32","shape":[2],"data_offsets":[8,0])"), eight))
            .find("data offsets [8, 0) end before they begin") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F32","shape":[2],"data_offsets":[4,12])"), eight))
            .find("reach past the 8 bytes of data the file holds") != std::string::npos);
  CHECK(error_of(file_of(entry(R"("dtype":"F32","shape":[3],"data_offsets":[0,8])"), eight))
            .find("hold 8 bytes; its dtype and shape take 12") != std::string::npos);
  CHECK(error_of(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"I16","shape":[2],"data_offsets":[6,10]}})",
                         std::vector<uint8_t>(10)))
            .find("tensors 'a' and 'b' overlap") != std::string::npos);
  CHECK(error_of(file_of(R"({"__metadata__":{"k":1}})")).find("'k' is not a string") !=
        std::string::npos);
  // A gap between tensors, and an empty tensor anywhere, are fine.
  CHECK(error_of(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[2,2]},)"
                         R"("b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})",
                         eight))
            .empty());

  CHECK_THROWS_WITH_AS(SafetensorsFile("/nonexistent/w.safetensors"),
                       doctest::Contains("/nonexistent/w.safetensors: cannot open it"),
                       SafetensorsError);
  CHECK_THROWS_WITH_AS(SafetensorsFile(std::filesystem::temp_directory_path().string()),
                       doctest::Contains("not a regular file"), SafetensorsError);
  const std::string empty = write_temp({}, "kiln_safetensors_empty.safetensors");
  CHECK_THROWS_WITH_AS(SafetensorsFile{empty}, doctest::Contains("0 bytes, shorter"),
                       SafetensorsError);
  std::filesystem::remove(empty);
}
