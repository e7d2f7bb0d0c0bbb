/** \file
 * Source files carried inside the `kiln` binary (cmake/embed_files.cmake): the shipped plugins
 * that `kiln new-runtime` starts a new runtime from, so an installed Kiln has them too.
 */
#pragma once

namespace kiln::cli {

/** One embedded file: its path under the source tree ("runtimes/cc/cc_plugin.c") and text. */
struct EmbeddedFile {
  const char* path;
  const char* text;
};

extern const EmbeddedFile kEmbeddedFiles[];
extern const int kEmbeddedFileCount;

}  // namespace kiln::cli
