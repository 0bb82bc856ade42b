// The commands of myriarch-updater. main() looks the command up in commands() and runs it.
// Each command lives in its own cmd_<name>.cpp and returns the process exit code:
// 0 success, 1 runtime error (`myriarch-updater: <what>: <path/key>: <why>`), 2 usage error.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace myr::cli {

struct Command {
    const char* name;
    const char* summary;  // one line for the overview; null: hidden from it
    const char* help;     // the full --help text of the command
    int (*run)(const std::vector<std::string>& args);
};

const std::vector<Command>& commands();
const Command* find_command(const std::string& name);

// The whole tool's --help.
std::string overview();

// Prints "myriarch-updater <cmd>: <msg>" and a hint to use --help; returns 2.
int usage_error(const std::string& command, const std::string& message);
// Prints "myriarch-updater: <message>"; returns 1.
int runtime_error(const Error& e);
// The same for an error that may quote a state file (`status`, `forget`): its control characters
// written out (text::escape_controls), so the file cannot drive the terminal; returns 1.
int state_error(const Error& e);
// Prints a command's --help to stdout; returns 0.
int print_help(const std::string& command);

int cmd_version(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_copy(const std::vector<std::string>& args);
int cmd_install_self(const std::vector<std::string>& args);
int cmd_verify(const std::vector<std::string>& args);
int cmd_forget(const std::vector<std::string>& args);
int cmd_status(const std::vector<std::string>& args);
int cmd_container(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_internal_extract(const std::vector<std::string>& args);

}  // namespace myr::cli
