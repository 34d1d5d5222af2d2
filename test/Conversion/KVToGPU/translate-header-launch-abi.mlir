// REQUIRES: cc, cuda-header
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/decode-kernels.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %cc -std=c11 -Wall -Werror -fsyntax-only -I %cuda_include -I %t %S/Inputs/check_launch_abi.c

// The typed launchers call cuLaunchKernelEx (a merge launched as a
// programmatic dependent of its split kernel) with the header's own copies
// of CUlaunchConfig and CUlaunchAttribute; cuda.h, where CUDA is
// installed, must agree with them field by field.
