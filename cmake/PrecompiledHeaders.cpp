// The target that owns the precompiled header kvir's static libraries share
// (CMakeLists.txt, KVIR_PRECOMPILED_HEADERS): CMake builds a PCH only for a
// target with a source of its own, and this is that source.
