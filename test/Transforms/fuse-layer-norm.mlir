// RUN: tfm-opt %s -split-input-file -tfm-fuse-layer-norm | FileCheck %s

// Post-norm as the importer writes it: LN(x + sublayer(x)) with γ and β.
// CHECK-LABEL: func @post_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[F:[a-z0-9]+]]: {{.+}}, %[[G:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[Y:.+]] = tfm.layer_norm %[[X]] residual(%[[F]] : tensor<?x?x64xf32>) scale(%[[G]] : tensor<64xf32>) bias(%[[B]] : tensor<64xf32>) epsilon 9.9999997473787516E-6 : tensor<?x?x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @post_norm(%x: tensor<?x?x64xf32>, %f: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %sum = tfm.add %x, %f : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %mean = tfm.mean %sum axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %c = tfm.sub %sum, %mean : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %sq = tfm.mul %c, %c : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %var = tfm.mean %sq axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %d = tfm.add %var, %eps : tensor<?x?x1xf32>, tensor<f32> -> tensor<?x?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x?x1xf32>
  %n = tfm.mul %c, %r : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %y = tfm.mul %n, %g : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %z = tfm.add %y, %b : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  return %z : tensor<?x?x64xf32>
}

// -----

// Pre-norm: the residual sum feeds the next residual too, so it stays and
// is the norm's input.
// CHECK-LABEL: func @sum_has_another_user
// CHECK: %[[SUM:.+]] = tfm.add
// CHECK-NEXT: %[[Y:.+]] = tfm.layer_norm %[[SUM]] scale(%{{.+}} : tensor<64xf32>) bias(%{{.+}} : tensor<64xf32>) epsilon
// CHECK-NEXT: return %[[Y]], %[[SUM]]
func.func @sum_has_another_user(%x: tensor<?x?x64xf32>, %f: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %sum = tfm.add %x, %f : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %mean = tfm.mean %sum axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %c = tfm.sub %sum, %mean : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %sq = tfm.mul %c, %c : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %var = tfm.mean %sq axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %d = tfm.add %var, %eps : tensor<?x?x1xf32>, tensor<f32> -> tensor<?x?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x?x1xf32>
  %n = tfm.mul %c, %r : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %y = tfm.mul %n, %g : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %z = tfm.add %y, %b : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  return %z, %sum : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Variance as E[x²] - E[x]², normalization as a division by sqrt, no affine.
// CHECK-LABEL: func @mean_of_squares_and_sqrt
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x8xf32>)
// CHECK-NEXT: %[[Y:.+]] = tfm.layer_norm %[[X]] epsilon 0.0010000000474974513 : tensor<?x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @mean_of_squares_and_sqrt(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %mean = tfm.mean %x axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %xx = tfm.mul %x, %x : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %exx = tfm.mean %xx axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %mm = tfm.mul %mean, %mean : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %var = tfm.sub %exx, %mm : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %epsf = arith.constant dense<1.0e-3> : tensor<1xf32>
  %d = tfm.add %epsf, %var : tensor<1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %s = tfm.sqrt %d : tensor<?x1xf32>
  %c = tfm.sub %x, %mean : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %n = tfm.div %c, %s : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}

// -----

// Only β: scale absent, bias present.
// CHECK-LABEL: func @bias_only
// CHECK-NEXT: %[[Y:.+]] = tfm.layer_norm %{{.+}} bias(%{{.+}} : tensor<8xf32>) epsilon
// CHECK-NEXT: return %[[Y]]
func.func @bias_only(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %mean = tfm.mean %x axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %c = tfm.sub %x, %mean : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %sq = tfm.mul %c, %c : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %var = tfm.mean %sq axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %d = tfm.add %var, %eps : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x1xf32>
  %n = tfm.mul %r, %c : tensor<?x1xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %z = tfm.add %b, %n : tensor<8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %z : tensor<?x8xf32>
}

// -----

// Twin: a "γ" that is a full tensor, not a [D] vector, is no affine scale:
// the norm fuses without it and the multiply stays.
// CHECK-LABEL: func @elementwise_scale_is_not_gamma
// CHECK: %[[N:.+]] = tfm.layer_norm %{{.+}} epsilon
// CHECK-NEXT: %[[Y:.+]] = tfm.mul %[[N]], %{{.+}} : tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @elementwise_scale_is_not_gamma(%x: tensor<?x8xf32>, %g: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %mean = tfm.mean %x axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %c = tfm.sub %x, %mean : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %sq = tfm.mul %c, %c : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %var = tfm.mean %sq axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %d = tfm.add %var, %eps : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x1xf32>
  %n = tfm.mul %c, %r : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %y = tfm.mul %n, %g : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Negative twin: the centered value escapes, so it must stay computed.
// CHECK-LABEL: func @centered_has_another_user
// CHECK-NOT: tfm.layer_norm
// CHECK: tfm.rsqrt
func.func @centered_has_another_user(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %mean = tfm.mean %x axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %c = tfm.sub %x, %mean : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %sq = tfm.mul %c, %c : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %var = tfm.mean %sq axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %d = tfm.add %var, %eps : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x1xf32>
  %n = tfm.mul %c, %r : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  return %n, %c : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Negative twin: statistics over axis 0, not the last axis.
// CHECK-LABEL: func @wrong_axis
// CHECK-NOT: tfm.layer_norm
func.func @wrong_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %mean = tfm.mean %x axis 0 : tensor<4x8xf32> -> tensor<1x8xf32>
  %c = tfm.sub %x, %mean : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  %sq = tfm.mul %c, %c : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %var = tfm.mean %sq axis 0 : tensor<4x8xf32> -> tensor<1x8xf32>
  %d = tfm.add %var, %eps : tensor<1x8xf32>, tensor<f32> -> tensor<1x8xf32>
  %r = tfm.rsqrt %d : tensor<1x8xf32>
  %n = tfm.mul %c, %r : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Negative twin: ε is a runtime value, not a constant.
// CHECK-LABEL: func @epsilon_not_constant
// CHECK-NOT: tfm.layer_norm
func.func @epsilon_not_constant(%x: tensor<?x8xf32>, %eps: tensor<f32>) -> tensor<?x8xf32> {
  %mean = tfm.mean %x axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %c = tfm.sub %x, %mean : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %sq = tfm.mul %c, %c : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %var = tfm.mean %sq axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %d = tfm.add %var, %eps : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x1xf32>
  %n = tfm.mul %c, %r : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}

// -----

// Negative twin: the "variance" squares something other than x - mean.
// CHECK-LABEL: func @not_a_variance
// CHECK-NOT: tfm.layer_norm
func.func @not_a_variance(%x: tensor<?x8xf32>, %w: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %mean = tfm.mean %x axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %c = tfm.sub %x, %mean : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  %sq = tfm.mul %w, %w : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %var = tfm.mean %sq axis 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %d = tfm.add %var, %eps : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x1xf32>
  %n = tfm.mul %c, %r : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}

// -----

// T5's RMS norm: x · rsqrt(E[x·x] + eps) · γ, no mean, no β; x also feeds
// the next residual and stays.
// CHECK-LABEL: func @rms_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[G:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[Y:.+]] = tfm.layer_norm %[[X]] scale(%[[G]] : tensor<64xf32>) epsilon 9.9999999747524271E-7 rms : tensor<?x?x64xf32>
// CHECK-NEXT: return %[[Y]], %[[X]]
func.func @rms_norm(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %eps = arith.constant dense<1.0e-6> : tensor<f32>
  %sq = tfm.mul %x, %x : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %ms = tfm.mean %sq axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %d = tfm.add %ms, %eps : tensor<?x?x1xf32>, tensor<f32> -> tensor<?x?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x?x1xf32>
  %n = tfm.mul %x, %r : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %y = tfm.mul %n, %g : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  return %y, %x : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Not an RMS norm: the squares are of another tensor than the one scaled.
// CHECK-LABEL: func @rms_of_another
// CHECK-NOT: tfm.layer_norm
func.func @rms_of_another(%x: tensor<?x?x64xf32>, %w: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %eps = arith.constant dense<1.0e-6> : tensor<f32>
  %sq = tfm.mul %w, %w : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %ms = tfm.mean %sq axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %d = tfm.add %ms, %eps : tensor<?x?x1xf32>, tensor<f32> -> tensor<?x?x1xf32>
  %r = tfm.rsqrt %d : tensor<?x?x1xf32>
  %n = tfm.mul %x, %r : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  return %n : tensor<?x?x64xf32>
}
