// RUN: tfm-opt %s -convert-tfm-to-linalg | FileCheck %s

// Sinusoidal positions in f64, one linalg.generic over (b, j, c):
// angle = (offset + j) / 10000^(i/n), sin or cos, truncated to the element
// type. The kinds differ in the pair i of channel c and in n: the paper's
// and Hugging Face's n = d/2 (32 at d = 64), Marian's own n = d/2 - 1 (31).

// CHECK-LABEL: func.func @concat(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<?x?xi32>, %[[OFF:[a-z0-9]+]]: index)
// CHECK: linalg.generic
// CHECK: %[[J:.+]] = linalg.index 1 : index
// CHECK: %[[P:.+]] = arith.addi %[[OFF]], %[[J]] : index
// CHECK: %[[C:.+]] = linalg.index 2 : index
// CHECK: %[[SIN:.+]] = arith.cmpi ult, %[[C]], %c32 : index
// CHECK: %[[CI:.+]] = arith.subi %[[C]], %c32 : index
// CHECK: %[[I:.+]] = arith.select %[[SIN]], %[[C]], %[[CI]] : index
// CHECK: %[[N:.+]] = arith.constant 3.200000e+01 : f64
// CHECK: %[[E:.+]] = arith.divf %{{.+}}, %[[N]] : f64
// CHECK: %[[DEN:.+]] = math.powf %{{.+}}, %[[E]] : f64
// CHECK: %[[A:.+]] = arith.divf %{{.+}}, %[[DEN]] : f64
// CHECK: %[[S:.+]] = math.sin %[[A]] : f64
// CHECK: %[[K:.+]] = math.cos %[[A]] : f64
// CHECK: %[[V:.+]] = arith.select %[[SIN]], %[[S]], %[[K]] : f64
// CHECK: arith.truncf %[[V]] : f64 to f32
func.func @concat(%ids: tensor<?x?xi32>, %offset: index) -> tensor<?x?x64xf32> {
  %0 = tfm.position_encoding sinusoidal_concat %ids, %offset : tensor<?x?xi32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @concat_half_minus_one(
// CHECK: %[[C:.+]] = linalg.index 2 : index
// CHECK: %[[SIN:.+]] = arith.cmpi ult, %[[C]], %c32 : index
// CHECK: %[[N:.+]] = arith.constant 3.100000e+01 : f64
// CHECK: %[[E:.+]] = arith.divf %{{.+}}, %[[N]] : f64
// CHECK: math.powf %{{.+}}, %[[E]] : f64
// CHECK: arith.select %[[SIN]]
func.func @concat_half_minus_one(%ids: tensor<?x?xi32>, %offset: index) -> tensor<?x?x64xf32> {
  %0 = tfm.position_encoding sinusoidal_concat_half_minus_one %ids, %offset : tensor<?x?xi32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @interleaved(
// CHECK: %[[C:.+]] = linalg.index 2 : index
// CHECK: %[[I:.+]] = arith.divui %[[C]], %c2 : index
// CHECK: %[[R:.+]] = arith.remui %[[C]], %c2 : index
// CHECK: %[[SIN:.+]] = arith.cmpi eq, %[[R]], %c0{{.*}} : index
// CHECK: %[[N:.+]] = arith.constant 3.200000e+01 : f64
// CHECK: arith.select %[[SIN]]
func.func @interleaved(%ids: tensor<?x?xi32>, %offset: index) -> tensor<?x?x64xf32> {
  %0 = tfm.position_encoding sinusoidal_interleaved %ids, %offset : tensor<?x?xi32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func.func @learned(
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<512x64xf32>)
// CHECK: %[[P:.+]] = arith.addi
// CHECK: %[[C:.+]] = linalg.index 2 : index
// CHECK: tensor.extract %[[T]][%[[P]], %[[C]]] : tensor<512x64xf32>
// CHECK-NOT: math.sin
func.func @learned(%ids: tensor<?x?xi32>, %offset: index, %table: tensor<512x64xf32>) -> tensor<?x?x64xf32> {
  %0 = tfm.position_encoding learned %ids, %offset table(%table : tensor<512x64xf32>) : tensor<?x?xi32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}
