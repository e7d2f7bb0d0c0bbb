// `kiln compile FILE[:COMPOSITE] [--runtime R] [-o OUT] [--object]`: prints (or writes to OUT)
// the source generated for the runtime's backend; with --object, compiles it through the
// runtime (and its cache) and writes the artifact, the cache entry's payload, to OUT.
#include <fstream>
#include <iostream>

#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct CompileCommand {
  CodeRequest req;
  std::string out;
  bool object = false;
};

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path);
}

void compile(const CompileCommand& o) {
  if (o.object && o.out.empty())
    throw UsageError("--object writes a binary artifact: name the file with -o OUT");
  Loaded l;
  load_selection(o.req.sel, l);
  Graph g = lower_loaded(l, o.req.test, o.req.specialize);
  std::unique_ptr<Runtime> rt = open_runtime(o.req.runtime);
  CompileOptions opt = compile_options(o.req.config, 0, *rt, l);
  const Backend& backend = backend_for(rt->backend());
  LoweredProgram p = plan_program(g, opt);
  if (!o.object) {
    generate_code(p, backend, opt);
    if (o.out.empty()) {
      std::cout << p.source;
      return;
    }
    write_file(o.out, p.source.data(), p.source.size());
    std::cout << "wrote " << p.source.size() << " bytes of source to " << o.out << "\n";
    return;
  }
  std::string identity = program_identity(p, rt->backend(), opt);
  auto make_source = [&] {
    generate_code(p, backend, opt);
    return p.source;
  };
  CompileInfo info;
  std::vector<uint8_t> artifact = rt->build_artifact(identity, make_source, {}, &info);
  for (const std::string& w : info.warnings)
    std::cerr << "kiln: warning: " << w << "\n";
  write_file(o.out, artifact.data(), artifact.size());
  std::cout << "wrote " << artifact.size() << " bytes of " << rt->name() << " artifact to " << o.out
            << " (cache " << (info.cache_hit ? "hit" : "miss") << ", key " << info.key << ")\n";
}

}  // namespace

void add_compile_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "compile", "Print the generated source of a composite, or compile it to an artifact");
  auto o = std::make_shared<CompileCommand>();
  add_code_options(*cmd, o->req);
  cmd->add_option("-o,--output", o->out, "Write to this file instead of standard output");
  cmd->add_flag("--object", o->object,
                "Compile through the runtime and write the artifact (the cache entry); needs -o");
  cmd->callback([o, &exit_code] {
    compile(*o);
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
