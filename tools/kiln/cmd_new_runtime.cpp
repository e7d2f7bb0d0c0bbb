// `kiln new-runtime NAME --from cc|cuda [--dir DIR]`: a new runtime to edit, started from a
// shipped plugin — DIR/NAME/ with the descriptor NAME.toml, the plugin's C source (every entry of
// the ABI table commented), a CMakeLists.txt that builds it out of tree against an installed Kiln
// (find_package(Kiln)) or this build's include/, and a README with the commands that build and
// check it (`kiln test-runtime`). docs/plugins.md walks through it.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "tools/kiln/commands.h"
#include "tools/kiln/embedded_files.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

struct Options {
  std::string name, from, dir = ".";
};

std::string embedded(const std::string& path) {
  for (int i = 0; i < kEmbeddedFileCount; ++i)
    if (path == kEmbeddedFiles[i].path) return kEmbeddedFiles[i].text;
  throw std::logic_error("kiln new-runtime: " + path + " is not embedded");
}

/** What each entry of the table does, as a comment after it (include/kiln/plugin_api.h). */
const std::map<std::string, std::string>& entry_comments() {
  static const std::map<std::string, std::string> c = {
      {"abi_version", "the ABI this plugin was built for: leave it"},
      {"name", "what messages call the plugin (the descriptor's name is what users see)"},
      {"version", "part of every cache key: raise it when what compile produces changes"},
      {"compiler_version", "the compiler's identity, part of every cache key"},
      {"target", "CPU features or GPU architecture, part of every cache key"},
      {"compile", "source -> artifact bytes (flags: NUL-separated, ending with \"\")"},
      {"prepare", "optional: warm up for compile on another thread while Kiln plans"},
      {"configure", "optional: run-time settings (threads), before launches"},
      {"load", "artifact -> module handle"},
      {"lookup", "a symbol of a loaded module, or NULL where it has none"},
      {"unload", "drops a module"},
      {"alloc", "device memory (host memory on a CPU)"},
      {"release", "frees what alloc gave"},
      {"copy_to_device", "host -> device bytes"},
      {"copy_to_host", "device -> host bytes"},
      {"launch", "runs a kernel: buffers, then sizes, on the geometry (CPU: ignore it)"},
      {"synchronize", "waits for every launch so far; reports their errors"},
      {"describe_device", "one line for --debug and kiln test-runtime"},
      {"free_blob", "frees compile's artifact"},
      {"free_string", "frees an error message this plugin made"},
  };
  return c;
}

/** `source` with its table's name set to `name`, each entry of the table commented, and the
 *  comment at its top replaced by `header`. */
std::string adapt_plugin(std::string source, const std::string& name, const std::string& was,
                         const std::string& header) {
  if (source.starts_with("/*")) source = source.substr(source.find("*/") + 3);
  source = header + source;
  source = std::regex_replace(source, std::regex("\\.name = \"" + was + "\""),
                              ".name = \"" + name + "\"");
  source = std::regex_replace(source, std::regex("\\.version = \"[^\"]*\",[^\\n]*"),
                              ".version = \"1\",");
  std::string out;
  std::istringstream in(source);
  const std::regex entry("^    \\.([a-z_]+) = [^/]*,$");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, entry) && entry_comments().count(m[1].str()))
      line += " /* " + entry_comments().at(m[1].str()) + " */";
    out += line + "\n";
  }
  return out;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UsageError("cannot write " + path.string());
}

}  // namespace

void add_new_runtime_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "new-runtime",
      "Start a runtime plugin of your own from a shipped one: a descriptor, the plugin's source "
      "with its ABI table commented, a CMake project that builds it against an installed Kiln");
  auto o = std::make_shared<Options>();
  cmd->add_option("name", o->name, "The runtime's name: a C identifier, e.g. mycc")->required();
  cmd->add_option("--from", o->from,
                  "The plugin to start from: cc (C through the system compiler, then dlopen) or "
                  "cuda (CUDA C through NVRTC and the driver API)")
      ->required();
  cmd->add_option("--dir", o->dir, "Where to make the folder NAME/")->capture_default_str();
  cmd->callback([o, &exit_code] {
    const std::string& name = o->name;
    if (!std::regex_match(name, std::regex("[a-z_][a-z0-9_]*")))
      throw UsageError("the runtime's name '" + name +
                       "' must be a C identifier in lower case (letters, digits, _)");
    if (o->from != "cc" && o->from != "cuda")
      throw UsageError("--from " + o->from +
                       ": expected cc or cuda (the clang runtime compiles in process through "
                       "LLVM's C++ API; start from cc and set $CC=clang for a plugin that calls "
                       "clang)");
    const fs::path dir = fs::path(o->dir) / name;
    if (fs::exists(dir) && !fs::is_empty(dir))
      throw UsageError(dir.string() + " exists and is not empty; give another --dir or name");
    fs::create_directories(dir);
    const bool cuda = o->from == "cuda";
    const std::string library = "kiln_runtime_" + name;
    const std::string header =
        "/* The \"" + name + "\" runtime, started by `kiln new-runtime " + name + " --from " +
        o->from + "` from Kiln's " + o->from +
        " plugin. Kiln calls the functions of the table at the\n * end through "
        "kiln_plugin_entry (the only exported symbol); include/kiln/plugin_api.h is the whole\n"
        " * interface, docs/plugins.md the guide. Build: see README.md beside this file. */\n";
    std::vector<std::string> sources = {name + "_plugin.c"};
    if (cuda) {
      // The plugin's own headers lie beside it in the scaffold.
      auto local = [](const std::string& text) {
        return std::regex_replace(text, std::regex("#include \"runtimes/cuda/([a-z_]+\\.h)\""),
                                  "#include \"$1\"");
      };
      write(dir / (name + "_plugin.c"),
            adapt_plugin(local(embedded("runtimes/cuda/cuda_plugin.c")), name, "cuda", header));
      for (const char* f : {"nvrtc.c", "tensor_maps.c", "tensor_maps.h", "cuda_api.h"})
        write(dir / f, local(embedded(std::string("runtimes/cuda/") + f)));
      sources.push_back("nvrtc.c");
      sources.push_back("tensor_maps.c");
    } else {
      write(dir / (name + "_plugin.c"),
            adapt_plugin(embedded("runtimes/cc/cc_plugin.c"), name, "cc", header));
    }
    write(dir / (name + ".toml"),
          "# The " + name + " runtime (docs/plugins.md, \"The descriptor\").\nname = \"" + name +
              "\"\nbackend = \"" + (cuda ? "cuda" : "c") +
              "\"  # the renderer: c, openmp, cuda or opencl\nplugin = \"build/lib" + library +
              ".so\"  # a path, relative to this file\n" +
              (cuda ? ""
                    : "flags = [\"-std=c11\"]  # passed to compile(), after the plugin's own\n"
                      "concurrent_compile = true  # compile() may run on several threads at "
                      "once (each call its own temporary folder)\n"));
    std::string list;
    for (const std::string& s : sources)
      list += " " + s;
    write(dir / "CMakeLists.txt",
          "# Builds the " + name +
              " runtime's plugin against an installed Kiln (-DCMAKE_PREFIX_PATH=PREFIX), or\n"
              "# against a source tree's include/ (-DKILN_INCLUDE=PATH/include) without one.\n"
              "cmake_minimum_required(VERSION 3.20)\nproject(" +
              library + " C)\nif(KILN_INCLUDE)\n  add_library(kiln_plugin_api INTERFACE)\n" +
              "  target_include_directories(kiln_plugin_api INTERFACE ${KILN_INCLUDE})\n" +
              "  add_library(Kiln::plugin_api ALIAS kiln_plugin_api)\nelse()\n" +
              "  find_package(Kiln 0.1 REQUIRED)\nendif()\nadd_library(" + library + " MODULE" +
              list + ")\ntarget_link_libraries(" + library +
              " PRIVATE Kiln::plugin_api ${CMAKE_DL_LIBS}" + (cuda ? " Threads::Threads" : "") +
              ")\nset_target_properties(" + library +
              " PROPERTIES C_STANDARD 11 C_VISIBILITY_PRESET hidden)\n" +
              (cuda ? "find_package(Threads REQUIRED)\n" : ""));
    write(dir / "README.md",
          "# The " + name + " runtime\n\nStarted from Kiln's `" + o->from +
              "` plugin by `kiln new-runtime`. Build it and check it against Kiln's "
              "interpreter:\n\n```sh\ncmake -S . -B build -DCMAKE_PREFIX_PATH=/path/to/kiln/"
              "install   # or -DKILN_INCLUDE=/path/to/kiln/include\ncmake --build build\n"
              "kiln run std:nn.toml:softmax --runtime ./" +
              name + ".toml --debug 1\nkiln test-runtime ./" + name + ".toml --report " + name +
              ".md\n```\n\nThen edit `" + name +
              "_plugin.c`: each entry of the table at its end says what Kiln expects of it "
              "(docs/plugins.md, \"The plugin\"). Put `" +
              name + ".toml` in a folder of `KILN_RUNTIME_PATH` to call it `--runtime " + name +
              "`.\n");
    std::cout << "made " << dir.string() << ": " << name << ".toml, " << name << "_plugin.c"
              << (cuda ? ", nvrtc.c, tensor_maps.c, tensor_maps.h, cuda_api.h" : "")
              << ", CMakeLists.txt, README.md\n"
              << "next: cd " << dir.string()
              << " && cmake -S . -B build -DCMAKE_PREFIX_PATH=<Kiln's install> && cmake --build "
                 "build && kiln test-runtime ./"
              << name << ".toml\n";
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
