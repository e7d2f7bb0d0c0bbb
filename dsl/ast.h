/** \file
 * The syntax tree of the expression language used in composite bodies, type strings and
 * rule files, and the source text it is parsed from (which keeps the file position of every
 * character, so errors inside a TOML string point at the right line and column).
 */
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dsl/diagnostic.h"

namespace kiln {

/** Text taken from a spec, with the file position of each character. */
struct SourceText {
  std::string text;
  std::string file;
  std::vector<std::pair<int, int>> pos;  ///< (line, col) of text[k]; one extra entry for the end
  SourceLoc loc(size_t offset) const;
};

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

/** A call argument; `name` is empty for a positional one. */
struct Arg {
  std::string name;
  ExprPtr value;
  SourceLoc loc;
};

/** One expression node. */
struct Expr {
  enum class Kind { number, boolean, name, string, unary, binary, call, subscript, list, ellipsis };
  Kind kind = Kind::number;
  SourceLoc loc;
  std::string text;            ///< name, string, operator ("+", "<=", "neg"...) or callee
  double number = 0;           ///< number, boolean (0/1)
  bool is_integer = false;     ///< number: written without '.', 'e' or "inf"
  int64_t integer = 0;         ///< number: its value when is_integer (wide: its bits)
  bool wide = false;           ///< number: an integer literal in [2^63, 2^64) (a u64 value)
  std::vector<ExprPtr> items;  ///< unary/binary operands; subscript: base then indices; list
  std::vector<Arg> args;       ///< call arguments
};

/** The left side of a statement: `y` or `y[i, j]` (index notation). */
struct Target {
  std::string name;
  SourceLoc loc;
  bool indexed = false;
  std::vector<std::pair<std::string, SourceLoc>> indices;
  /** Per index, the bound of `i < N` (its range [0, N)), or null. */
  std::vector<ExprPtr> bounds;
};

/** `targets = value`; several targets take the outputs of a multi-output composite. */
struct BodyStatement {
  std::vector<Target> targets;
  ExprPtr value;
  SourceLoc loc;
};

/** A parsed tensor type: `const T[..., N, (H - R) / stride + 1]`. */
struct TypeSpec {
  bool is_const = false;
  std::string dtype;  ///< dtype name or type variable
  SourceLoc dtype_loc;
  bool has_shape = false;  ///< false for a bare `T`: the shape is whatever the body computes
  bool batch = false;      ///< a leading `...`
  std::vector<ExprPtr> dims;
  SourceLoc loc;
  std::string text;  ///< as written
};

/** Short text of an expression, for messages. */
std::string expr_str(const Expr& e);

}  // namespace kiln
