# `cmake --install BUILD --prefix P` (docs/install.md):
#   P/bin/kiln
#   P/lib/libkiln.so                    the public API, include/kiln/kiln.h (target Kiln::kiln)
#   P/include/kiln/{kiln.h,plugin_api.h}
#   P/lib/cmake/Kiln/                   KilnConfig.cmake: find_package(Kiln)
#   P/lib/pkgconfig/kiln.pc
#   P/lib/kiln/                         the runtime plugins (runtimes/CMakeLists.txt)
#   P/share/kiln/{rules,runtimes,ops,baselines}
# (lib is CMAKE_INSTALL_LIBDIR.) Nothing installed names the source or build folder: the binary
# and the library find the rest relative to themselves (ir/data_dirs.h).
include(CMakePackageConfigHelpers)

set(kiln_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)

install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kiln_shared kiln_plugin_api EXPORT KilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/kiln/kiln.h ${PROJECT_SOURCE_DIR}/include/kiln/plugin_api.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)

install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${kiln_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/KilnConfig.cmake INSTALL_DESTINATION ${kiln_cmake_dir})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
        DESTINATION ${kiln_cmake_dir})

# kiln.pc finds its prefix from its own folder, so a moved prefix still works.
file(RELATIVE_PATH KILN_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" KILN_PC_TO_PREFIX "${KILN_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The data folders. A descriptor is installed only with its plugin.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/simplifier/rules/ DESTINATION ${KILN_INSTALL_DATADIR}/rules
        FILES_MATCHING PATTERN "*.toml")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/ops/ DESTINATION ${KILN_INSTALL_DATADIR}/ops
        FILES_MATCHING PATTERN "*.toml")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tools/baselines/ DESTINATION ${KILN_INSTALL_DATADIR}/baselines)
foreach(runtime cc clang openmp cuda opencl)
  if(TARGET kiln_runtime_${runtime})
    install(FILES ${PROJECT_SOURCE_DIR}/runtimes/${runtime}.toml
            DESTINATION ${KILN_INSTALL_DATADIR}/runtimes)
  endif()
endforeach()
