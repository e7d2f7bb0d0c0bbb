#include "ir/sizes.h"

#include <cstdio>
#include <set>

#include "ir/graph.h"

namespace kiln {

namespace {

using u128 = unsigned __int128;

std::string u128_str(u128 v) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}

/** "2^40" for a power of two, else the number. */
std::string limit_str(int64_t limit) {
  if (limit > 0 && (limit & (limit - 1)) == 0)
    return "2^" + std::to_string(__builtin_ctzll(static_cast<uint64_t>(limit)));
  return std::to_string(limit);
}

/** The exact product of `dims` (none negative) as text; past 2^128 an approximation. */
std::string count_str(const std::vector<int64_t>& dims) {
  u128 n = 1;
  long double approx = 1;
  bool exact = true;
  for (int64_t d : dims) {
    approx *= static_cast<long double>(d);
    exact = exact && !__builtin_mul_overflow(n, static_cast<u128>(d), &n);
  }
  if (exact) return u128_str(n);
  char buf[48];
  std::snprintf(buf, sizeof buf, "about %.3Le", approx);
  return buf;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k)
    s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

/** " with M = 3, N = 7" for the sizes `shape` uses, or "" when it uses none. */
std::string bound_str(const Shape& shape, const std::map<std::string, int64_t>& sizes) {
  std::set<std::string> seen;
  std::string s;
  for (const IntExpr& d : shape) {  // in order of first appearance
    std::set<std::string> vars;
    d.collect_vars(vars);
    for (const std::string& v : vars)
      if (auto it = sizes.find(v); it != sizes.end() && seen.insert(v).second)
        s += (s.empty() ? " with " : ", ") + v + " = " + std::to_string(it->second);
  }
  return s;
}

std::string rank_error(size_t rank) {
  return " has " + std::to_string(rank) + " dimensions, more than the limit " +
         std::to_string(kMaxRank);
}

}  // namespace

int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what, int64_t limit) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    throw SizeError(what + ": " + dims_str(dims) + rank_error(dims.size()));
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] < 0)
      throw SizeError(what + ": dimension " + std::to_string(k) + " of " + dims_str(dims) + " is " +
                      std::to_string(dims[k]) + "; a dimension must not be negative");
  std::optional<int64_t> n = checked_product(dims);
  if (!n || *n > limit)
    throw SizeError(what + ": " + dims_str(dims) + " has " + count_str(dims) +
                    " elements, more than the limit " + limit_str(limit));
  return *n;
}

int64_t checked_bytes(DType dtype, const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = checked_numel(dims, what);
  std::optional<int64_t> bytes = checked_mul(n, dtype_bits(dtype) / 8);
  if (!bytes) throw SizeError(what + ": the byte count of " + dims_str(dims) + " overflows int64");
  return *bytes;
}

std::vector<int64_t> eval_checked_shape(const std::string& what, DType dtype, const Shape& shape,
                                        const std::map<std::string, int64_t>& sizes,
                                        int64_t limit) {
  // The messages are built only on failure: this runs for every buffer of every launch.
  auto type = [&] { return std::string(dtype_name(dtype)) + shape_str(shape); };
  auto dim = [&](size_t k) {
    return what + ": dimension " + std::to_string(k) + " (" + shape[k].str() + ") of " + type();
  };
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw SizeError(what + ": " + type() + rank_error(shape.size()));
  std::vector<int64_t> dims;
  for (size_t k = 0; k < shape.size(); ++k) {
    int64_t v = 0;
    try {
      v = shape[k].eval(sizes);
    } catch (const std::overflow_error&) {
      throw SizeError(dim(k) + " overflows int64" + bound_str({shape[k]}, sizes));
    } catch (const std::runtime_error& e) {  // an unbound size, a division by zero
      throw SizeError(dim(k) + ": " + e.what() + bound_str({shape[k]}, sizes));
    }
    if (v < 0)
      throw SizeError(dim(k) + " is " + std::to_string(v) + bound_str({shape[k]}, sizes) +
                      "; a dimension must not be negative");
    dims.push_back(v);
  }
  std::optional<int64_t> n = checked_product(dims);
  if (!n || *n > limit)
    throw SizeError(what + ": " + type() + bound_str(shape, sizes) + " has " + count_str(dims) +
                    " elements, more than the limit " + limit_str(limit));
  return dims;
}

void check_graph_sizes(const Graph& g, const std::map<std::string, int64_t>& sizes,
                       bool interior_in_memory) {
  std::vector<bool> port(g.size(), false);
  for (NodeId id : g.inputs) {
    port[id] = true;
    const Node& n = g[id];
    eval_checked_shape("input '" + n.name + "' of '" + g.name + "'", n.dtype, n.shape, sizes);
  }
  for (const GraphOutput& o : g.outputs) {
    if (o.node < 0 || o.node >= static_cast<NodeId>(g.size())) continue;  // the verifier's job
    port[o.node] = true;
    const Node& n = g[o.node];
    eval_checked_shape("output '" + o.name + "' of '" + g.name + "'", n.dtype, n.shape, sizes);
  }
  int64_t limit = interior_in_memory ? kMaxElements : INT64_MAX;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    if (port[id]) continue;
    const Node& n = g[id];
    std::string what = "tensor %" + std::to_string(id) + " (" + std::string(op_name(n.op)) +
                       ") of '" + g.name + "'" +
                       (interior_in_memory ? ", held in memory by the reference interpreter" : "");
    eval_checked_shape(what, n.dtype, n.shape, sizes, limit);
  }
}

}  // namespace kiln
