#include "tools/kiln/graphviz.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace kiln::cli {

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

/** Closes a file descriptor when it goes out of scope. */
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

/** Writes all of `data` to `fd`; false (errno set) when the reader went away or on an error. */
bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<std::string> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path || name.empty() || name.find('/') != std::string::npos) return std::nullopt;
  std::string dirs = path;
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    if (dir.empty()) dir = ".";  // an empty entry is the current folder
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0)
      return candidate;
    begin = end + 1;
  }
  return std::nullopt;
}

std::string require_graphviz(const std::string& format) {
  std::optional<std::string> dot = find_on_path("dot");
  if (!dot)
    throw std::runtime_error("--format " + format +
                             " needs Graphviz's 'dot' on PATH (Debian: apt install graphviz)");
  return *dot;
}

void render_with_graphviz(const std::string& dot, const std::string& dot_text,
                          const std::string& format, const std::string& output) {
  Fd out;
  if (!output.empty()) {
    out.fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out.fd < 0) throw std::runtime_error("cannot write '" + output + "': " + errno_text());
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw std::runtime_error("cannot start Graphviz's dot: " + errno_text());
  Fd read_end{pipe_fds[0]}, write_end{pipe_fds[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, read_end.fd, STDIN_FILENO);
  if (out.fd >= 0) posix_spawn_file_actions_adddup2(&actions, out.fd, STDOUT_FILENO);
  std::string type = "-T" + format, path = dot;
  std::vector<char*> argv = {path.data(), type.data(), nullptr};
  std::cout.flush();  // dot writes to the same stdout after what was printed
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, dot.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot run " + dot + ": " + std::strerror(spawned));
  read_end.reset();
  // A dot that stops reading early (a syntax error) must not end this process by SIGPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  bool written = write_all(write_end.fd, dot_text);
  int write_errno = errno;
  write_end.reset();  // end of input
  sigaction(SIGPIPE, &old, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(dot + " -T" + format + " failed (" +
                             (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                                : "ended by a signal") +
                             ")");
  if (!written)
    throw std::runtime_error("cannot hand the graph to " + dot + ": " + std::strerror(write_errno));
}

}  // namespace kiln::cli
