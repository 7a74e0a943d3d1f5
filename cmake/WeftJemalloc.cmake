# SPDX-License-Identifier: MIT
# weft's memory: a private copy of jemalloc, or the C library's allocator.
#
# WEFT_JEMALLOC=ON (the default, except in sanitizer builds, where ASan and
# TSan must see every block): weft's own allocations and NUMA chunk arenas
# use jemalloc's non-standard API (mallocx, dallocx, mallctl). Debian's
# libjemalloc is built unprefixed, so linking it would make it the host
# program's malloc/free; instead the build turns libjemalloc_pic.a into one
# object whose symbols are all renamed weft__je_* and local but four
# (cmake/weft_jemalloc_object.cmake) and puts it inside libweft.a. The host
# keeps its malloc; consumers link nothing more than weft's own libraries.
#
# WEFT_JEMALLOC=OFF: no jemalloc at all. weft allocates with malloc and
# posix_memalign and takes NUMA chunk memory from mmap'd pages bound with
# hwloc.
#
# Sets WEFT_USE_JEMALLOC (the effective choice) and provides
# weft_use_jemalloc(<target>), which adds the object to the library.
option(WEFT_JEMALLOC
       "Allocate weft's memory from a private, renamed copy of jemalloc" ON)

set(WEFT_USE_JEMALLOC ${WEFT_JEMALLOC})
if(WEFT_JEMALLOC AND WEFT_SANITIZE)
  message(STATUS "weft: sanitizer build, so WEFT_JEMALLOC is ignored: weft "
                 "allocates through the C library where the sanitizer sees it")
  set(WEFT_USE_JEMALLOC OFF)
endif()

if(WEFT_USE_JEMALLOC)
  pkg_check_modules(JEMALLOC REQUIRED jemalloc)
  find_library(WEFT_JEMALLOC_PIC_ARCHIVE NAMES libjemalloc_pic.a
               HINTS ${JEMALLOC_LIBDIR} ${JEMALLOC_LIBRARY_DIRS}
               DOC "jemalloc's position-independent static archive")
  if(NOT WEFT_JEMALLOC_PIC_ARCHIVE)
    message(FATAL_ERROR "weft: libjemalloc_pic.a not found (Debian: "
                        "libjemalloc-dev); or configure with -DWEFT_JEMALLOC=OFF")
  endif()
  # The toolchain's binutils (CMake finds them with the compiler).
  foreach(tool OBJCOPY NM AR)
    if(NOT CMAKE_${tool})
      message(FATAL_ERROR "weft: WEFT_JEMALLOC needs ${tool} (binutils); "
                          "or configure with -DWEFT_JEMALLOC=OFF")
    endif()
  endforeach()
endif()
set(WEFT_JEMALLOC_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/weft_jemalloc_object.cmake)

function(weft_use_jemalloc target)
  if(NOT WEFT_USE_JEMALLOC)
    return()
  endif()
  set(obj ${CMAKE_CURRENT_BINARY_DIR}/weft_jemalloc.o)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND}
            -DWEFT_JEMALLOC_ARCHIVE=${WEFT_JEMALLOC_PIC_ARCHIVE}
            -DWEFT_OUTPUT=${obj}
            -DWEFT_WORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/weft_jemalloc
            -DWEFT_C_COMPILER=${CMAKE_C_COMPILER}
            -DWEFT_AR=${CMAKE_AR}
            -DWEFT_NM=${CMAKE_NM}
            -DWEFT_OBJCOPY=${CMAKE_OBJCOPY}
            -P ${WEFT_JEMALLOC_SCRIPT}
    DEPENDS ${WEFT_JEMALLOC_PIC_ARCHIVE} ${WEFT_JEMALLOC_SCRIPT}
    COMMENT "Making weft's private jemalloc (weft__je_*)"
    VERBATIM)
  set_source_files_properties(${obj} PROPERTIES EXTERNAL_OBJECT TRUE
                                                GENERATED TRUE)
  target_sources(${target} PRIVATE ${obj})
  # jemalloc's header, for the MALLOCX_* macros; its functions are called
  # by their private names (core/jemalloc.h).
  target_include_directories(${target} SYSTEM PRIVATE ${JEMALLOC_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE WEFT_JEMALLOC=1)
  # What jemalloc's objects need from the system: libm (exp, log), libdl
  # (dlsym; part of libc since glibc 2.34) and pthreads.
  target_link_libraries(${target} PUBLIC m ${CMAKE_DL_LIBS})
endfunction()

# What weft.pc adds to its Libs for the private jemalloc (after -lm).
set(WEFT_PC_JEMALLOC_LIBS "")
if(WEFT_USE_JEMALLOC)
  foreach(lib IN LISTS CMAKE_DL_LIBS)
    string(APPEND WEFT_PC_JEMALLOC_LIBS " -l${lib}")
  endforeach()
endif()
