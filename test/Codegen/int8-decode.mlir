// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv::int8ToF16 (extended to f32) on every int8 code, in the emulator: on
// the vector path (four codes per 32-bit word, as the decode kernel takes
// them) and on the scalar path. The expected value of each code is written
// out below as a float (two's complement: bytes 0x80 ... 0xff are -128 ...
// -1) and compared exactly.

// IR-LABEL: gpu.func @decode_int8
// IR: vector.bitcast %{{.*}} : vector<4xi8> to vector<1xi32>
// IR: arith.xori
// IR: vector.shuffle
// IR-NOT: arith.sitofp
// IR: gpu.return

// CHECK: int8 bad 0

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @decode_int8(%codes: memref<256xi8>, %vectors: memref<256xf32>, %scalars: memref<256xf32>) kernel
        attributes {test.component = "fp8_decode", test.format = "int8"} {
      gpu.return
    }
  }
  memref.global "private" constant @codes : memref<256xi8> = dense<[
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
    64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
    80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95,
    96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127,
    -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113,
    -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97,
    -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81,
    -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65,
    -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49,
    -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33,
    -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17,
    -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1]>
  memref.global "private" constant @int8 : memref<256xf32> = dense<[
    0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0,
    16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0,
    32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0,
    48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0,
    64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0,
    80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0,
    96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0,
    112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0,
    -128.0, -127.0, -126.0, -125.0, -124.0, -123.0, -122.0, -121.0, -120.0, -119.0, -118.0, -117.0, -116.0, -115.0, -114.0, -113.0,
    -112.0, -111.0, -110.0, -109.0, -108.0, -107.0, -106.0, -105.0, -104.0, -103.0, -102.0, -101.0, -100.0, -99.0, -98.0, -97.0,
    -96.0, -95.0, -94.0, -93.0, -92.0, -91.0, -90.0, -89.0, -88.0, -87.0, -86.0, -85.0, -84.0, -83.0, -82.0, -81.0,
    -80.0, -79.0, -78.0, -77.0, -76.0, -75.0, -74.0, -73.0, -72.0, -71.0, -70.0, -69.0, -68.0, -67.0, -66.0, -65.0,
    -64.0, -63.0, -62.0, -61.0, -60.0, -59.0, -58.0, -57.0, -56.0, -55.0, -54.0, -53.0, -52.0, -51.0, -50.0, -49.0,
    -48.0, -47.0, -46.0, -45.0, -44.0, -43.0, -42.0, -41.0, -40.0, -39.0, -38.0, -37.0, -36.0, -35.0, -34.0, -33.0,
    -32.0, -31.0, -30.0, -29.0, -28.0, -27.0, -26.0, -25.0, -24.0, -23.0, -22.0, -21.0, -20.0, -19.0, -18.0, -17.0,
    -16.0, -15.0, -14.0, -13.0, -12.0, -11.0, -10.0, -9.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0]>

  func.func @check(%expected: memref<256xf32>, %vectors: memref<256xf32>, %scalars: memref<256xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %bad = scf.for %i = %c0 to %c256 step %c1 iter_args(%n = %zero) -> i32 {
      %want = memref.load %expected[%i] : memref<256xf32>
      %v = memref.load %vectors[%i] : memref<256xf32>
      %s = memref.load %scalars[%i] : memref<256xf32>
      %vOk = arith.cmpf oeq, %v, %want : f32
      %sOk = arith.cmpf oeq, %s, %want : f32
      %ok = arith.andi %vOk, %sOk : i1
      %inc = arith.select %ok, %zero, %one : i32
      %m = arith.addi %n, %inc : i32
      scf.yield %m : i32
    }
    vector.print str "int8 bad "
    vector.print %bad : i32
    return
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %codes = memref.get_global @codes : memref<256xi8>
    %int8 = memref.get_global @int8 : memref<256xf32>
    %vectors = memref.alloc() : memref<256xf32>
    %scalars = memref.alloc() : memref<256xf32>
    gpu.launch_func @kernels::@decode_int8 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%codes : memref<256xi8>, %vectors : memref<256xf32>, %scalars : memref<256xf32>)
    call @check(%int8, %vectors, %scalars) : (memref<256xf32>, memref<256xf32>, memref<256xf32>) -> ()
    memref.dealloc %vectors : memref<256xf32>
    memref.dealloc %scalars : memref<256xf32>
    return
  }
}
