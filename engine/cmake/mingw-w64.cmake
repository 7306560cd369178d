# Cross-compiling the engine for 64-bit Windows with mingw-w64 (make test-windows):
#   cmake -S engine -B build/windows -DCMAKE_TOOLCHAIN_FILE=engine/cmake/mingw-w64.cmake
# CTest runs each test program under wine (CMAKE_CROSSCOMPILING_EMULATOR), in a wine prefix of
# the build's own (ZC_WINE_PREFIX; never $HOME's), made on first use.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(ZC_MINGW x86_64-w64-mingw32 CACHE STRING "mingw-w64 target triplet (the compiler's prefix)")
set(CMAKE_C_COMPILER ${ZC_MINGW}-gcc)
set(CMAKE_RC_COMPILER ${ZC_MINGW}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${ZC_MINGW})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

find_program(ZC_WINE NAMES wine64 wine PATHS /usr/lib/wine NO_CMAKE_FIND_ROOT_PATH)
if(ZC_WINE)
  if(NOT ZC_WINE_PREFIX)
    set(ZC_WINE_PREFIX ${CMAKE_BINARY_DIR}/wine-prefix)
  endif()
  set(ZC_WINE_PREFIX ${ZC_WINE_PREFIX} CACHE PATH "The wine prefix the tests run in")
  set(CMAKE_CROSSCOMPILING_EMULATOR env WINEPREFIX=${ZC_WINE_PREFIX} WINEDEBUG=-all ${ZC_WINE})
endif()
