# Run at build time (cmake -P) by the loadlab_git_commit target of shared/CMakeLists.txt:
# writes OUTPUT, a .cpp defining loadlab::git_commit(), from the git checkout in SOURCE_DIR.
# The commit is `git rev-parse --short=12 HEAD`, with "-dirty" when tracked files differ from
# it, or "unknown" outside a git checkout (a source tarball) or without git. configure_file
# rewrites OUTPUT only when its text changes, so an unchanged commit rebuilds nothing and a
# new one recompiles this one file and relinks the binaries.
set(commit "unknown")
find_program(GIT_PROGRAM git)
if(GIT_PROGRAM)
  execute_process(COMMAND ${GIT_PROGRAM} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE head_status ERROR_QUIET)
  if(head_status EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
    set(commit "${head}")
    # `git status` refreshes the index first, so a file merely touched is not "dirty".
    execute_process(COMMAND ${GIT_PROGRAM} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE status_status ERROR_QUIET)
    if(status_status EQUAL 0 AND NOT changes STREQUAL "")
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(LOADLAB_GIT_COMMIT "${commit}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/git_commit.cpp.in ${OUTPUT} @ONLY)
