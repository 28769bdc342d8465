#include "temporary_file.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessera::detail {
namespace {

// The registered path lives in static storage: the signal handlers read it, and may not allocate.
char g_path[PATH_MAX + 1] = {};
volatile sig_atomic_t g_armed = 0;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kSignalCount = sizeof kSignals / sizeof kSignals[0];
struct sigaction g_previous[kSignalCount];
bool g_installed[kSignalCount] = {};

extern "C" void remove_and_reraise(int signal_number) {
  remove_temporary_file();
  // The previous disposition (the default: terminate) takes over; the signal is blocked while this
  // handler runs, and is delivered again once it returns.
  for (int i = 0; i < kSignalCount; ++i)
    if (kSignals[i] == signal_number && g_installed[i]) sigaction(signal_number, &g_previous[i], nullptr);
  raise(signal_number);
}

std::string directory_of(const std::string& file) {
  const auto slash = file.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return file.substr(0, slash);
}

std::string base_name_of(const std::string& file) {
  const auto slash = file.find_last_of('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// The host name as it appears in temporary names: characters other than letters, digits, '.' and
// '_' become '_' (a '-' would make the name ambiguous to read back).
std::string host_tag() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) std::snprintf(host, sizeof host, "unknown");
  std::string tag(host);
  for (char& c : tag)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_')) c = '_';
  return tag;
}

// Whether no process `pid` runs any more: none exists, or only its zombie (killed, and its parent
// died before reaping it). Alive under another user (EPERM) counts as running.
bool process_gone(long pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char text[512] = {};
  const std::size_t got = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  const char* paren = std::strrchr(text, ')');  // after the command name, which may hold anything
  return got > 0 && paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

bool all_of(const std::string& s, std::size_t begin, std::size_t end, const char* allowed) {
  if (begin >= end) return false;
  for (std::size_t i = begin; i < end; ++i)
    if (!std::strchr(allowed, s[i])) return false;
  return true;
}

}  // namespace

void register_temporary_file(const std::string& path) {
  unregister_temporary_file();
  if (path.size() > PATH_MAX) return;  // cannot be created either
  std::memcpy(g_path, path.c_str(), path.size() + 1);
  g_armed = 1;
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction previous {};
    if (sigaction(kSignals[i], nullptr, &previous) != 0) continue;
    // An ignored signal does not end the process, nor one the program catches itself (an app that
    // checkpoints and stops on SIGTERM): the write goes on, and its temporary with it.
    if (previous.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = &remove_and_reraise;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    if (sigaction(kSignals[i], &action, &g_previous[i]) == 0) g_installed[i] = true;
  }
}

void unregister_temporary_file() {
  g_armed = 0;
  for (int i = 0; i < kSignalCount; ++i) {
    if (g_installed[i]) sigaction(kSignals[i], &g_previous[i], nullptr);
    g_installed[i] = false;
  }
  g_path[0] = '\0';
}

bool temporary_file_registered() noexcept { return g_armed != 0; }

void remove_temporary_file() noexcept {
  if (!g_armed) return;
  g_armed = 0;
  unlink(g_path);  // async-signal-safe
}

std::string temporary_name_for(const std::string& file) {
  // A long base name is shortened so that the whole name stays within NAME_MAX (255) bytes.
  std::string base = base_name_of(file);
  if (base.size() > 120) base.resize(120);
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  char tail[96];
  std::snprintf(tail, sizeof tail, "-%ld-%llx", static_cast<long>(getpid()), static_cast<unsigned long long>(ticks));
  std::string host = host_tag();
  if (host.size() > 64) host.resize(64);
  return directory_of(file) + "/." + base + ".tmp-" + host + tail;
}

int remove_stale_temporaries(const std::string& file) {
  const std::string directory = directory_of(file);
  std::string host = host_tag();
  if (host.size() > 64) host.resize(64);
  const std::string marker = ".tmp-" + host + "-";
  DIR* dir = opendir(directory.c_str());
  if (!dir) return 0;
  int removed = 0;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    // .BASE.tmp-HOST-PID-HEX, BASE not empty
    if (name.size() < 2 || name[0] != '.') continue;
    const auto at = name.rfind(marker);
    if (at == std::string::npos || at < 2) continue;
    const std::size_t pid_begin = at + marker.size();
    const auto dash = name.find('-', pid_begin);
    if (dash == std::string::npos || !all_of(name, pid_begin, dash, "0123456789") ||
        !all_of(name, dash + 1, name.size(), "0123456789abcdef") || dash - pid_begin > 9)
      continue;
    const long pid = std::strtol(name.substr(pid_begin, dash - pid_begin).c_str(), nullptr, 10);
    if (pid <= 0 || pid == static_cast<long>(getpid())) continue;
    if (!process_gone(pid)) continue;  // still being written
    const std::string path = directory + "/" + name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (unlink(path.c_str()) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

}  // namespace tessera::detail
