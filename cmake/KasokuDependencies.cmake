# Finds a dependency or stops with the package that provides it (instead of CMake's generic "Could not find a
# package configuration file"). `make deps` installs every Debian package the build needs.
macro(kasoku_require name debian what)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "kasoku needs ${what}, and CMake did not find it (find_package(${name})).\n"
                        "Install it with\n    sudo apt-get install ${debian}\n(Debian, Ubuntu), or run `make deps` in the kasoku "
                        "directory: it installs every system package the build needs. Other systems: install ${what} "
                        "with their package manager, or point CMAKE_PREFIX_PATH at it.")
  endif()
endmacro()

# The same for a header (find_path) or a library (find_library).
macro(kasoku_require_path var header debian what)
  find_path(${var} ${header})
  if(NOT ${var})
    message(FATAL_ERROR "kasoku's tests need ${what} (header ${header} not found). Install it with\n"
                        "    sudo apt-get install ${debian}\nor run `make deps`.")
  endif()
endmacro()
macro(kasoku_require_library var lib debian what)
  find_library(${var} ${lib})
  if(NOT ${var})
    message(FATAL_ERROR "kasoku's tests need ${what} (library ${lib} not found). Install it with\n"
                        "    sudo apt-get install ${debian}\nor run `make deps`.")
  endif()
endmacro()
