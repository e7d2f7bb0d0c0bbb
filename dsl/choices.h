/** \file
 * Choices a caller makes when instantiating a composite from text — `T=f16` and `alpha=0.2` on
 * the command line or in the C++ API — parsed and checked against the composite's declaration.
 * Mistakes throw std::invalid_argument with one sentence; callers map that to their own error.
 */
#pragma once

#include <string>

#include "dsl/spec.h"

namespace kiln {

/** The dtype `spelling` for type variable `name` of `c`, checked against what it allows (an
 *  undeclared type variable takes float dtypes). */
DType parse_dtype_choice(const Composite& c, const std::string& name, const std::string& spelling);

/** An attribute value written as text, read as the kind of the declared default (a list of
 *  integers is comma-separated). */
AttrValue parse_attr_choice(const std::string& text, const AttrDecl& decl);

}  // namespace kiln
