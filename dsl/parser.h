/** \file
 * The parser of the expression language: composite bodies (statements), single expressions,
 * and tensor types. Throws SpecError at the first problem, pointing at the offending token.
 */
#pragma once

#include <vector>

#include "dsl/ast.h"

namespace kiln {

/** Statements separated by newlines or ';'. `#` starts a comment. */
std::vector<BodyStatement> parse_body(const SourceText& src);

/** One expression filling the whole text. */
ExprPtr parse_expression(const SourceText& src);

/** A tensor type: `[const] DTYPE[dims]`, `DTYPE[]` (a scalar) or a bare `DTYPE`. */
TypeSpec parse_type(const SourceText& src);

}  // namespace kiln
