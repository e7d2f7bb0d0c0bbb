/* A test-only plugin that runs nothing: it records the settings (`configure`) and the launch
 * geometry Kiln hands it, and the test reads them back through kiln_test_recorded. Its
 * "artifact" is the source text; every symbol looks up to a function that does nothing. */
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin_api.h"

typedef struct recorded {
  int configures;   /* calls of configure */
  int threads;      /* the last configure's thread count */
  int launches;     /* calls of launch */
  kiln_launch last; /* the last launch's geometry */
} recorded;

static recorded rec;

const recorded* kiln_test_recorded(void) {
  return &rec;
}

static void nothing(void) {}
static const char* identity(void) {
  return "recording 1";
}
static int compile(const char* source, const char* flags, kiln_blob* artifact, char** error) {
  (void)flags;
  (void)error;
  artifact->size = strlen(source);
  artifact->data = malloc(artifact->size + 1);
  memcpy(artifact->data, source, artifact->size + 1);
  return 0;
}
static int configure(const kiln_runtime_config* config, char** error) {
  (void)error;
  rec.configures++;
  rec.threads = config->threads;
  return 0;
}
static void* load(const void* artifact, size_t size, char** error) {
  (void)artifact;
  (void)size;
  (void)error;
  return &rec;
}
static void* lookup(void* module, const char* symbol) {
  (void)module;
  size_t n = strlen(symbol), tail = strlen("_workspace");
  if (n >= tail && strcmp(symbol + n - tail, "_workspace") == 0) return NULL;  // none kept
  return (void*)&nothing;
}
static void unload(void* module) {
  (void)module;
}
static void* alloc(size_t bytes, char** error) {
  (void)error;
  return calloc(1, bytes ? bytes : 1);
}
static int copy(void* dst, const void* src, size_t bytes, char** error) {
  (void)error;
  if (bytes) memcpy(dst, src, bytes);
  return 0;
}
static int launch(void* kernel, void* const* buffers, const int64_t* sizes,
                  const kiln_launch* geometry, char** error) {
  (void)kernel;
  (void)buffers;
  (void)sizes;
  (void)error;
  rec.launches++;
  rec.last = *geometry;
  return 0;
}
static int synchronize(char** error) {
  (void)error;
  return 0;
}
static void free_blob(kiln_blob* blob) {
  free(blob->data);
}
static void free_string(char* s) {
  free(s);
}

static const kiln_plugin kTable = {
    .abi_version = KILN_PLUGIN_ABI_VERSION,
    .name = "recording",
    .version = "1",
    .compiler_version = identity,
    .target = identity,
    .compile = compile,
    .configure = configure,
    .load = load,
    .lookup = lookup,
    .unload = unload,
    .alloc = alloc,
    .release = free,
    .copy_to_device = copy,
    .copy_to_host = copy,
    .launch = launch,
    .synchronize = synchronize,
    .describe_device = identity,
    .free_blob = free_blob,
    .free_string = free_string,
};

const kiln_plugin* kiln_plugin_entry(void) {
  return &kTable;
}
