// ir/npy.h: .npy files as NumPy writes them, round trips of every dtype, and one clear error per
// malformed file.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ir/npy.h"

using namespace kiln;

namespace {

/** A version 1.0 file with `header` (padded as NumPy pads it) and `elements`. */
std::vector<uint8_t> npy_file(std::string header, const std::vector<uint8_t>& elements) {
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file.append(elements.begin(), elements.end());
  std::vector<uint8_t> out(file.begin(), file.end());
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    parse_npy(bytes.data(), bytes.size(), "x.npy");
  } catch (const NpyError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("npy: a file as NumPy 1.x writes it") {
  // np.save of np.arange(6, dtype=np.float32).reshape(2, 3)
  std::vector<uint8_t> elements;
  for (float v : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    elements.insert(elements.end(), b, b + 4);
  }
  Tensor t = parse_npy(
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", elements).data(),
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", elements).size(),
      "x.npy");
  CHECK(t.dtype == DType::f32);
  CHECK(t.dims == std::vector<int64_t>{2, 3});
  CHECK(t.at(5) == 5.0);
}

TEST_CASE("npy: every dtype round-trips; bf16 is written as f32") {
  for (DType d : all_dtypes()) {
    CAPTURE(dtype_name(d));
    Tensor t = random_tensor(d, {3, 1, 4}, 7, -3, 3);
    std::vector<uint8_t> bytes = npy_bytes(t);
    CHECK((bytes.size() - t.numel() * (d == DType::bf16 ? 4 : dtype_bits(d) / 8)) % 64 == 0);
    Tensor back = parse_npy(bytes.data(), bytes.size(), "t.npy");
    CHECK(back.dtype == (d == DType::bf16 ? DType::f32 : d));
    CHECK(back.dims == t.dims);
    for (size_t k = 0; k < t.numel(); ++k)
      CHECK(back.at(k) == t.at(k));
  }
  Tensor scalar(DType::f64, {});
  scalar.set(0, 2.5);
  std::vector<uint8_t> bytes = npy_bytes(scalar);
  CHECK(parse_npy(bytes.data(), bytes.size(), "s.npy").at(0) == 2.5);
  Tensor one(DType::i32, {4});
  bytes = npy_bytes(one);
  CHECK(std::string(bytes.begin() + 10, bytes.end()).find("'shape': (4,)") != std::string::npos);
}

TEST_CASE("npy: u16, u32 and u64 as NumPy writes them, u64 past 2^63 exact") {
  std::vector<uint8_t> elements(16, 0xff);  // np.array([2**64 - 1, 2**63], dtype='<u8')
  elements[15] = 0x80;
  for (int k = 8; k < 15; ++k)
    elements[k] = 0;
  std::vector<uint8_t> file =
      npy_file("{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }", elements);
  Tensor t = parse_npy(file.data(), file.size(), "x.npy");
  CHECK(t.dtype == DType::u64);
  CHECK(static_cast<uint64_t>(t.i[0]) == ~uint64_t{0});
  CHECK(static_cast<uint64_t>(t.i[1]) == uint64_t{1} << 63);
  CHECK(npy_bytes(t) == file);
  file = npy_file("{'descr': '<u4', 'fortran_order': False, 'shape': (4,), }", elements);
  t = parse_npy(file.data(), file.size(), "x.npy");
  CHECK(t.dtype == DType::u32);
  CHECK(t.i == std::vector<int64_t>{4294967295, 4294967295, 0, 2147483648});
  file = npy_file("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
                  std::vector<uint8_t>{0xff, 0xff, 0x01, 0x80});
  t = parse_npy(file.data(), file.size(), "x.npy");
  CHECK(t.dtype == DType::u16);
  CHECK(t.i == std::vector<int64_t>{65535, 32769});
}

TEST_CASE("npy: a malformed file is one error naming the file and the fault") {
  const std::vector<uint8_t> four(4 * 6, 0);
  CHECK(error_of({'a', 'b'}).find("x.npy: not a .npy file") == 0);
  std::vector<uint8_t> v9 =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", four);
  v9[6] = 9;
  CHECK(error_of(v9).find("format version 9") != std::string::npos);
  CHECK(error_of(npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", four))
            .find("big-endian") != std::string::npos);
  CHECK(error_of(npy_file("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", four))
            .find("elements of type '<c8'") != std::string::npos);
  CHECK(error_of(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", four))
            .find("Fortran") != std::string::npos);
  CHECK(error_of(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", four))
            .find("more elements than the file holds") != std::string::npos);
  CHECK(error_of(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four))
            .find("24 bytes of elements, where f32 of that shape takes 20") != std::string::npos);
  CHECK(error_of(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': "
                          "(99999999999, 99999999999), }",
                          four))
            .find("more elements than the file holds") != std::string::npos);
  CHECK(error_of(npy_file("{'descr': '<f4', 'shape': (6,), }", four)).find("needs 'descr'") !=
        std::string::npos);
  CHECK(error_of(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6, }", four))
            .find("header: expected") != std::string::npos);
  std::vector<uint8_t> cut =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", four);
  cut.resize(20);
  CHECK(error_of(cut).find("cut short") != std::string::npos);
}
