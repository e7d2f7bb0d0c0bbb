#include "tools/kiln/torch_baseline.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "ir/data_dirs.h"

extern char** environ;

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

std::string tensor_json(const TorchTensor& t, const std::string& path) {
  std::string dims;
  for (int64_t d : t.dims)
    dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  return "{\"name\": " + json_string(t.name) +
         ", \"dtype\": " + json_string(std::string(dtype_name(t.dtype))) + ", \"shape\": [" + dims +
         "], \"path\": " + json_string(path) + "}";
}

/** The helper process and the two pipes to it. */
class TorchBaseline : public Subject {
 public:
  TorchBaseline(const TorchRequest& r, const std::vector<Tensor>& inputs) : outputs_(r.outputs) {
    std::signal(SIGPIPE, SIG_IGN);  // a helper that died is an error on write, not a kill
    char tmpl[] = "/tmp/kiln-torch-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("--vs torch: cannot make a temporary folder");
    dir_ = tmpl;
    std::string json =
        "{\"expr\": " + json_string(r.expr) + ", \"where\": " + json_string(r.where) +
        ", \"mode\": " + json_string(r.mode) + ", \"device\": " + json_string(r.device) +
        ", \"threads\": " + std::to_string(r.threads) + ", \"inputs\": [";
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      std::string path = dir_ + "/in" + std::to_string(k);
      std::vector<uint8_t> bytes = tensor_to_bytes(inputs.at(k));
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
      json += (k ? ", " : "") + tensor_json(r.inputs[k], path);
    }
    json += "], \"outputs\": [";
    for (size_t k = 0; k < r.outputs.size(); ++k)
      json += (k ? ", " : "") + tensor_json(r.outputs[k], output_path(k));
    json += "], \"attrs\": " + r.attrs_json + ", \"sizes\": " + r.sizes_json + "}\n";
    try {
      start();
      send(json);
      std::string reply = receive();
      if (reply != "ready") fail(reply);
    } catch (...) {  // the destructor does not run for a constructor that throws
      stop();
      throw;
    }
  }

  ~TorchBaseline() override { stop(); }

  void run() override {
    send("run\n");
    std::string reply = receive();
    // "MS" or, on a GPU, "MS DEVICE_MS" (CUDA events around the call)
    char* end = nullptr;
    double ms = std::strtod(reply.c_str(), &end);
    if (reply.empty() || end == reply.c_str()) fail(reply);
    device_ms_.reset();
    if (*end == ' ') {
      char* rest = nullptr;
      double device = std::strtod(end + 1, &rest);
      if (rest == end + 1) fail(reply);
      device_ms_ = device;
      end = rest;
    }
    if (*end != '\0') fail(reply);
    ms_ = ms;
  }

  std::optional<double> own_ms() const override { return ms_; }
  std::optional<double> device_ms() const override { return device_ms_; }

  std::optional<std::vector<Tensor>> outputs() const override {
    std::vector<Tensor> out;
    for (size_t k = 0; k < outputs_.size(); ++k) {
      std::ifstream f(output_path(k), std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                 std::istreambuf_iterator<char>());
      Tensor t(outputs_[k].dtype, outputs_[k].dims);
      if (bytes.size() != t.numel() * dtype_bits(t.dtype) / 8)
        throw std::runtime_error("--vs torch: output '" + outputs_[k].name + "' has " +
                                 std::to_string(bytes.size()) + " bytes, expected " +
                                 std::to_string(t.numel() * dtype_bits(t.dtype) / 8));
      out.push_back(tensor_from_bytes(t.dtype, t.dims, bytes.data()));
    }
    return out;
  }

 private:
  std::string output_path(size_t k) const { return dir_ + "/out" + std::to_string(k); }

  /** Asks the helper to quit, waits for it and removes the folder of the tensors. */
  void stop() {
    if (to_) {
      std::fputs("quit\n", to_);
      std::fclose(to_);
      to_ = nullptr;
    }
    if (from_) std::fclose(from_);
    from_ = nullptr;
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    pid_ = -1;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void start() {
    const char* env = std::getenv("KILN_PYTHON");
    python_ = env && *env ? env : "python3";
    std::string script = data_dir(DataDir::baselines) + "/torch_baseline.py";
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("--vs torch: pipe failed");
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]);
      close(in[1]);
      throw std::runtime_error("--vs torch: pipe failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<char*> argv = {python_.data(), script.data(), nullptr};
    int err = posix_spawnp(&pid_, python_.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
    if (err != 0) {
      pid_ = -1;
      throw std::runtime_error("--vs torch: cannot start the Python '" + python_ +
                               "' (KILN_PYTHON, default python3): " + std::strerror(err));
    }
  }

  void send(const std::string& line) {
    if (std::fputs(line.c_str(), to_) < 0 || std::fflush(to_) != 0) fail("");
  }

  /** One line from the helper without its newline; "" when it ended. */
  std::string receive() {
    std::string line;
    for (int ch; (ch = std::fgetc(from_)) != EOF && ch != '\n';)
      line += static_cast<char>(ch);
    return line;
  }

  /** Throws the helper's "error: ..." reply, or says how it ended. */
  [[noreturn]] void fail(const std::string& reply) {
    if (reply.rfind("error: ", 0) == 0) throw std::runtime_error("--vs torch: " + reply.substr(7));
    std::string how = "ended without a reply";
    if (!reply.empty()) how = "replied '" + reply + "'";
    int status = 0;
    if (reply.empty() && pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
      pid_ = -1;
      if (WIFEXITED(status))
        how += " (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
      else if (WIFSIGNALED(status))
        how += " (signal " + std::to_string(WTERMSIG(status)) + ")";
    }
    throw std::runtime_error("--vs torch: the helper (" + python_ + " torch_baseline.py) " + how);
  }

  std::vector<TorchTensor> outputs_;
  std::string dir_, python_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  std::optional<double> ms_, device_ms_;
};

}  // namespace

std::unique_ptr<Subject> make_torch_baseline(const TorchRequest& request,
                                             const std::vector<Tensor>& inputs) {
  return std::make_unique<TorchBaseline>(request, inputs);
}

}  // namespace kiln::cli
