// brain::OutputFile and write_file_safely: the one way brain writes a file (models, predictions, generated data,
// checkpoints, exports). The rules, in docs/reliability.md ("Output files"): the content goes to a temporary file
// beside the target (unpredictable name, O_EXCL, mode 0600), is fsync'ed, and is renamed over the target only when
// the target is absent or a regular file that is none of the caller's inputs. A symbolic link, directory, device,
// FIFO or socket at the target is refused, as is a target that is the same file (device and inode) as an input.
// On any failure the temporary is removed and the target is untouched.
#pragma once

#include <brain/export.hpp>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace brain {

// Checks, without creating anything, that `target` can be written under the rules above: its directory exists
// and is writable, and the target is absent or a writable regular file that is none of `inputs`. Call it before
// long work whose result goes there. Throws IoError naming the path, what is there, and what to do.
BRAIN_API void check_output_path(const std::filesystem::path& target,
                                 const std::vector<std::filesystem::path>& inputs = {});

// Checks the outputs of one piece of work: each as check_output_path does, and no two of them one file (after
// symbolic links and "..", or by device and inode). Throws IoError naming both paths.
BRAIN_API void check_output_paths(const std::vector<std::filesystem::path>& targets,
                                  const std::vector<std::filesystem::path>& inputs = {});

// A file being written: content goes to the temporary file; commit() puts it in place. Destroying an uncommitted
// OutputFile removes the temporary. Each OutputFile sets SIGXFSZ to ignored when it is at its default (which
// kills the process), so exceeding the file-size limit (ulimit -f) is an IoError instead.
class BRAIN_API OutputFile {
public:
    // Checks the target (check_output_path) and creates the temporary file beside it.
    explicit OutputFile(std::filesystem::path target, std::vector<std::filesystem::path> inputs = {});
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    // Append bytes; a failed or short write (disk full, file-size limit) throws IoError and removes the temporary.
    void write(std::string_view bytes);
    // Overwrite bytes already written, at `offset` (offset + size within size()): a header field known only once
    // the data after it is written (a checksum). Fails as write() does.
    void write_at(std::uint64_t offset, std::string_view bytes);
    // fsync the file, give it its final mode (the replaced file's permissions, or 0666 less the umask for a new
    // file), check the target again, rename over it and fsync the directory (inside an OutputGroup: hand it to
    // the group, which renames it). Throws IoError on failure.
    void commit();
    // The path being written.
    const std::filesystem::path& target() const noexcept { return m_target; }
    // Bytes written so far.
    std::uint64_t size() const noexcept { return m_written; }

private:
    void abandon() noexcept;
    // Abandons the file and throws the IoError of a write that failed with `err`.
    [[noreturn]] void fail_write(int err);
    std::filesystem::path m_target;
    std::vector<std::filesystem::path> m_inputs;
    std::filesystem::path m_temp;
    int m_slot = -1; // where remove_temporary_output_files finds the temporary
    int m_fd = -1;
    std::uint64_t m_written = 0;
    bool m_done = false;
};

// Files that belong together (two .npy files of one data set, a model's ONNX and safetensors files): while a group
// is open on a thread, commit() of an OutputFile made on that thread writes, fsyncs and checks its temporary but
// leaves it beside the target; the group's commit() renames them all, so that none is replaced unless every one
// was written. A group destroyed uncommitted removes them. Two files of a group may not be the same file.
class BRAIN_API OutputGroup {
public:
    // Opens the group on this thread; groups do not nest (InvalidState).
    OutputGroup();
    ~OutputGroup();
    OutputGroup(const OutputGroup&) = delete;
    OutputGroup& operator=(const OutputGroup&) = delete;

    // Checks every target again, then renames each file into place and fsyncs its directory. Throws IoError.
    void commit();

private:
    friend class OutputFile;
    struct Staged {
        std::filesystem::path temp;
        std::filesystem::path target;
        std::vector<std::filesystem::path> inputs;
        int slot = -1;
    };
    void stage(Staged staged);
    void discard() noexcept;
    std::vector<Staged> m_staged;
    bool m_open = true;
};

// Unlinks the temporary file of every OutputFile not yet committed, without locks or allocation: async-signal-
// safe, for a SIGINT/SIGTERM handler that then ends the process (the brain command installs one). Those
// OutputFiles can then no longer be committed.
BRAIN_API void remove_temporary_output_files() noexcept;

// Write `content` to `target` through an OutputFile (the whole file or nothing).
BRAIN_API void write_file_safely(const std::filesystem::path& target, std::string_view content,
                                 const std::vector<std::filesystem::path>& inputs = {});

} // namespace brain
