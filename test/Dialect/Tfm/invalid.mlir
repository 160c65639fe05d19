// One case per verifier rule: each must be rejected with a message that says
// what was expected and what was found.
// RUN: tfm-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{expected a non-empty checkpoint tensor name}}
%0 = tfm.weight "" : tensor<4xf32>

// -----

// expected-error @+1 {{expected a static shape for weight 'w', found [?, 4]}}
%0 = tfm.weight "w" : tensor<?x4xf32>

// -----

// expected-error @+1 {{expected at least one part for weight 'nothing'}}
%0 = tfm.weight "nothing" parts [] : tensor<2x8xf32>

// -----

// expected-error @+1 {{expected non-empty part names for weight 'a+'}}
%0 = tfm.weight "a+" parts ["a", ""] : tensor<2x8xf32>

// -----

// expected-error @+1 {{weight 's' stacks parts along its first axis, so it cannot be a scalar}}
%0 = tfm.weight "s" parts ["a"] : tensor<f32>

// -----

func.func @rows_of_no_weight(%t: tensor<8x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{expected a tfm.weight as input}}
  %0 = tfm.caller_rows %t from "rows" : tensor<8x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

%w = tfm.weight "w" : tensor<8x4xf32>
// expected-error @+1 {{expected a dynamic dimension 0 (the caller chooses how many rows), found [8, 4]}}
%0 = tfm.caller_rows %w from "rows" : tensor<8x4xf32> -> tensor<8x4xf32>

// -----

%w = tfm.weight "w" : tensor<8x4xf32>
// expected-error @+1 {{expected axis in [0, 2) for a tensor of rank 2, found 2}}
%0 = tfm.caller_rows %w from "rows" {axis = 2 : i64} : tensor<8x4xf32> -> tensor<?x4xf32>

// -----

%w = tfm.weight "w" : tensor<8x4xf32>
// expected-error @+1 {{expected result of shape [?, 4] (the input's shape with `?` along the axis), found [?, 5]}}
%0 = tfm.caller_rows %w from "rows" : tensor<8x4xf32> -> tensor<?x5xf32>

// -----

%w = tfm.weight "w" : tensor<8x4xf32>
// expected-error @+1 {{expected the name of the argument that holds the rows}}
%0 = tfm.caller_rows %w from "" : tensor<8x4xf32> -> tensor<?x4xf32>

// -----

func.func @embedding_table_rank(%t: tensor<10xf32>, %ids: tensor<?x?xi32>) {
  // expected-error @+1 {{expected a table of rank 2 [vocabulary, dimension], found rank 1}}
  %0 = tfm.embedding %t[%ids] : tensor<10xf32>, tensor<?x?xi32> -> tensor<?x?x1xf32>
  return
}

// -----

func.func @embedding_result(%t: tensor<10x8xf32>, %ids: tensor<?x?xi32>) {
  // expected-error @+1 {{expected result of shape [?, ?, 8] (the ids' shape followed by the table's row size), found [?, ?, 16]}}
  %0 = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<?x?xi32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @embedding_element_type(%t: tensor<10x8xf32>, %ids: tensor<?x?xi32>) {
  // expected-error @+1 {{expected all floating-point tensors to have element type 'f32', found 'f16' for result #0}}
  %0 = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<?x?xi32> -> tensor<?x?x8xf16>
  return
}

// -----

func.func @embedding_ids_type(%t: tensor<10x8xf32>, %ids: tensor<?x?xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x?xf32>'}}
  %0 = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<?x?xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @position_rank(%ids: tensor<?x?xi32>, %o: index) {
  // expected-error @+1 {{expected a result of rank 3 (the ids' rank plus one), found rank 2}}
  %0 = tfm.position_encoding sinusoidal_concat %ids, %o : tensor<?x?xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @position_dynamic_size(%ids: tensor<?x?xi32>, %o: index) {
  // expected-error @+1 {{expected a static encoding size (the result's last dimension), found ?}}
  %0 = tfm.position_encoding sinusoidal_concat %ids, %o : tensor<?x?xi32> -> tensor<?x?x?xf32>
  return
}

// -----

func.func @position_shape(%ids: tensor<2x?xi32>, %o: index) {
  // expected-error @+1 {{expected result of shape [2, ?, 8] (the ids' shape followed by the encoding size), found [3, ?, 8]}}
  %0 = tfm.position_encoding sinusoidal_concat %ids, %o : tensor<2x?xi32> -> tensor<3x?x8xf32>
  return
}

// -----

func.func @position_learned_without_table(%ids: tensor<?x?xi32>, %o: index) {
  // expected-error @+1 {{expected a table operand for learned positions}}
  %0 = tfm.position_encoding learned %ids, %o : tensor<?x?xi32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @position_table_shape(%ids: tensor<?x?xi32>, %o: index, %t: tensor<512x16xf32>) {
  // expected-error @+1 {{expected position table of shape [?, 8] ([positions, encoding size]), found [512, 16]}}
  %0 = tfm.position_encoding learned %ids, %o table(%t : tensor<512x16xf32>) : tensor<?x?xi32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @position_sinusoidal_with_table(%ids: tensor<?x?xi32>, %o: index, %t: tensor<512x8xf32>) {
  // expected-error @+1 {{expected no table for sinusoidal_interleaved positions}}
  %0 = tfm.position_encoding sinusoidal_interleaved %ids, %o table(%t : tensor<512x8xf32>) : tensor<?x?xi32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @position_odd_size(%ids: tensor<?x?xi32>, %o: index) {
  // expected-error @+1 {{expected an even encoding size for sinusoidal positions, found 7}}
  %0 = tfm.position_encoding sinusoidal_concat %ids, %o : tensor<?x?xi32> -> tensor<?x?x7xf32>
  return
}

// -----

func.func @position_half_minus_one_size(%ids: tensor<?x?xi32>, %o: index) {
  // expected-error @+1 {{expected an encoding size of at least 4 for sinusoidal_concat_half_minus_one positions (frequencies 10000^(-i/(d/2 - 1))), found 2}}
  %0 = tfm.position_encoding sinusoidal_concat_half_minus_one %ids, %o : tensor<?x?xi32> -> tensor<?x?x2xf32>
  return
}

// -----

func.func @position_half_minus_one_with_table(%ids: tensor<?x?xi32>, %o: index, %t: tensor<512x8xf32>) {
  // expected-error @+1 {{expected no table for sinusoidal_concat_half_minus_one positions}}
  %0 = tfm.position_encoding sinusoidal_concat_half_minus_one %ids, %o table(%t : tensor<512x8xf32>) : tensor<?x?xi32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @matmul_ranks(%a: tensor<?x4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{expected operands of the same rank, 2 or more, found ranks 3 and 2}}
  %0 = tfm.matmul %a, %b : tensor<?x4x8xf32>, tensor<8x4xf32> -> tensor<?x4x4xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{expected equal batch dimensions, found [2, 4, 8] and [3, 8, 4]}}
  %0 = tfm.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<?x4x8xf32>, %b: tensor<?x4x8xf32>) {
  // expected-error @+1 {{expected the contracted dimensions to agree, found 8 in the lhs and 4 in the rhs}}
  %0 = tfm.matmul %a, %b : tensor<?x4x8xf32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<?x4x8xf32>, %b: tensor<?x4x8xf32>) {
  // expected-error @+1 {{expected result of shape [?, 4, 4] (the batched product of the operands), found [?, 8, 8]}}
  %0 = tfm.matmul %a, %b {transpose_rhs = true} : tensor<?x4x8xf32>, tensor<?x4x8xf32> -> tensor<?x8x8xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expected a weight of rank 2 [out_features, in_features], found rank 1}}
  %0 = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_in_features(%x: tensor<?x8xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{expected weight of shape [?, 8] (in_features = the input's last dimension), found [16, 4]}}
  %0 = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<16x4xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{expected bias of shape [16] ([out_features]), found [8]}}
  %0 = tfm.linear %x, %w, %b : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_result(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{expected result of shape [?, 16] (the input's shape with out_features last), found [?, 8]}}
  %0 = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{expected an input of rank 1 or more, found rank 0}}
  %0 = tfm.linear %x, %w : (tensor<f32>, tensor<16x8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @fused_linear_residual(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>, %r: tensor<?x8xf32>) {
  // expected-error @+1 {{expected residual of shape [?, 16] (the result's shape), found [?, 8]}}
  %0 = tfm.fused_linear gelu %x, %w residual(%r : tensor<?x8xf32>) : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @fused_linear_gated_odd(%x: tensor<?x8xf32>, %w: tensor<15x8xf32>) {
  // expected-error @+1 {{gated: expected a weight of 2F rows (the two halves stacked), found 15}}
  %0 = tfm.fused_linear relu gated %x, %w : tensor<?x8xf32>, tensor<15x8xf32> -> tensor<?x7xf32>
  return
}

// -----

func.func @fused_linear_gated_dynamic(%x: tensor<?x8xf32>, %w: tensor<?x8xf32>) {
  // expected-error @+1 {{gated: expected a weight of 2F rows (the two halves stacked), found a dynamic count}}
  %0 = tfm.fused_linear relu gated %x, %w : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return
}

// -----

func.func @fused_linear_gated_result(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{expected result of shape [?, 8] (the input's shape with half of out_features last), found [?, 16]}}
  %0 = tfm.fused_linear relu gated %x, %w : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @fused_linear_in_features(%x: tensor<?x8xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{expected weight of shape [?, 8] (in_features = the input's last dimension), found [16, 4]}}
  %0 = tfm.fused_linear relu %x, %w : tensor<?x8xf32>, tensor<16x4xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @broadcast_mismatch(%a: tensor<?x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand shapes [?, 8] and [4] do not broadcast}}
  %0 = tfm.add %a, %b : tensor<?x8xf32>, tensor<4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @broadcast_result(%a: tensor<?x8xf32>, %b: tensor<?x1xf32>) {
  // expected-error @+1 {{expected result of shape [?, 8] (the broadcast of the operand shapes), found [?, 1]}}
  %0 = tfm.mul %a, %b : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  return
}

// -----

func.func @broadcast_element_type(%a: tensor<?x8xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{expected all floating-point tensors to have element type 'f32', found 'f16' for operand #1}}
  %0 = tfm.sub %a, %b : tensor<?x8xf32>, tensor<8xf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @unary_type(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tfm.relu"(%a) : (tensor<?x8xf32>) -> tensor<?x8xf16>
  return
}

// -----

func.func @softmax_axis(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{expected axis in [0, 2) for a tensor of rank 2, found 2}}
  %0 = tfm.softmax %a axis 2 : tensor<?x8xf32>
  return
}

// -----

func.func @mean_axis(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{expected axis in [0, 2) for a tensor of rank 2, found 5}}
  %0 = tfm.mean %a axis 5 : tensor<?x8xf32> -> tensor<?x1xf32>
  return
}

// -----

func.func @mean_result(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{expected result of shape [?, 1] (the input's shape with the reduced axis of size 1), found [?, 8]}}
  %0 = tfm.mean %a axis 1 : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @causal_rank(%s: tensor<8xf32>) {
  // expected-error @+1 {{expected scores of rank 2 or more, found rank 1}}
  %0 = tfm.causal_mask %s : tensor<8xf32>
  return
}

// -----

func.func @padding_rank(%s: tensor<8xf32>, %l: tensor<?xi32>) {
  // expected-error @+1 {{expected scores of rank 2 or more, found rank 1}}
  %0 = tfm.key_padding_mask %s, %l : tensor<8xf32>, tensor<?xi32>
  return
}

// -----

func.func @padding_lengths(%s: tensor<2x4x?x?xf32>, %l: tensor<3xi32>) {
  // expected-error @+1 {{expected lengths of shape [2] (one per batch row of the scores), found [3]}}
  %0 = tfm.key_padding_mask %s, %l : tensor<2x4x?x?xf32>, tensor<3xi32>
  return
}

// -----

func.func @key_starts(%s: tensor<2x4x1x?xf32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{expected starts of shape [2] (one per batch row of the scores), found [3]}}
  %0 = tfm.key_start_mask %s, %b : tensor<2x4x1x?xf32>, tensor<3xi32>
  return
}

// -----

func.func @position_starts(%ids: tensor<2x1xi32>, %step: index, %b: tensor<3xi32>) {
  // expected-error @+1 {{expected starts of shape [2] (one per batch row of the ids), found [3]}}
  %0 = tfm.position_encoding sinusoidal_concat %ids, %step starts(%b : tensor<3xi32>) : tensor<2x1xi32> -> tensor<2x1x8xf32>
  return
}

// -----

func.func @split_rank(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{expected an input of rank 3 [batch, sequence, heads * head_dim], found rank 2}}
  %0 = tfm.split_heads %x into 4 heads : tensor<?x64xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @split_heads_positive(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expected a positive number of heads, found 0}}
  %0 = tfm.split_heads %x into 0 heads : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @split_divisible(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expected the input's last dimension to be a multiple of 6 heads, found 64}}
  %0 = tfm.split_heads %x into 6 heads : tensor<?x?x64xf32> -> tensor<?x6x?x10xf32>
  return
}

// -----

func.func @split_result(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expected result of shape [?, 4, ?, 16] ([batch, heads, sequence, head_dim]), found [?, 4, ?, 8]}}
  %0 = tfm.split_heads %x into 4 heads : tensor<?x?x64xf32> -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @merge_rank(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expected an input of rank 4 [batch, heads, sequence, head_dim], found rank 3}}
  %0 = tfm.merge_heads %x : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return
}

// -----

func.func @merge_dynamic_heads(%x: tensor<?x?x?x16xf32>) {
  // expected-error @+1 {{expected static heads and head_dim, found [?, ?, ?, 16]}}
  %0 = tfm.merge_heads %x : tensor<?x?x?x16xf32> -> tensor<?x?x64xf32>
  return
}

// -----

func.func @merge_result(%x: tensor<?x4x?x16xf32>) {
  // expected-error @+1 {{expected result of shape [?, ?, 64] ([batch, sequence, heads * head_dim]), found [?, ?, 32]}}
  %0 = tfm.merge_heads %x : tensor<?x4x?x16xf32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @cache_rank(%u: tensor<?x4x16xf32>, %c: tensor<?x4x?x16xf32>, %o: index) {
  // expected-error @+1 {{expected update and cache of the same rank, found ranks 3 and 4}}
  %0 = tfm.cache_update %u into %c[%o] axis 2 : tensor<?x4x16xf32> into tensor<?x4x?x16xf32>
  return
}

// -----

func.func @cache_axis(%u: tensor<?x4x1x16xf32>, %c: tensor<?x4x?x16xf32>, %o: index) {
  // expected-error @+1 {{expected axis in [0, 4) for a tensor of rank 4, found 4}}
  %0 = tfm.cache_update %u into %c[%o] axis 4 : tensor<?x4x1x16xf32> into tensor<?x4x?x16xf32>
  return
}

// -----

func.func @cache_off_axis(%u: tensor<?x2x1x16xf32>, %c: tensor<?x4x?x16xf32>, %o: index) {
  // expected-error @+1 {{expected update of shape [?, 4, 1, 16] (the cache's shape off the axis), found [?, 2, 1, 16]}}
  %0 = tfm.cache_update %u into %c[%o] axis 2 : tensor<?x2x1x16xf32> into tensor<?x4x?x16xf32>
  return
}

// -----

func.func @cache_too_long(%u: tensor<?x4x9x16xf32>, %c: tensor<?x4x8x16xf32>, %o: index) {
  // expected-error @+1 {{expected update to be no longer than the cache along axis 2, found 9 > 8}}
  %0 = tfm.cache_update %u into %c[%o] axis 2 : tensor<?x4x9x16xf32> into tensor<?x4x8x16xf32>
  return
}

// -----

func.func @cache_result_type(%u: tensor<?x4x1x16xf32>, %c: tensor<?x4x?x16xf32>, %o: index) {
  // expected-error @+1 {{failed to verify that all of {cache, result} have same type}}
  %0 = "tfm.cache_update"(%u, %c, %o) {axis = 2 : i64} : (tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, index) -> tensor<?x4x8x16xf32>
  return
}

// -----

func.func @slice_too_long(%x: tensor<?x4x8x16xf32>, %o: index, %n: index) {
  // expected-error @+1 {{expected result to be no longer than the input along axis 2, found 9 > 8}}
  %0 = tfm.slice %x[%o, %n] axis 2 : tensor<?x4x8x16xf32> -> tensor<?x4x9x16xf32>
  return
}

// -----

func.func @cache_rows_along_rows(%x: tensor<?x4x?x16xf32>, %r: tensor<?x?xi32>) {
  // expected-error @+1 {{expected the positions' axis after the rows' (axis 0), found axis 0}}
  %0 = tfm.cache_rows %x[%r] axis 0 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @cache_rows_other_batch(%x: tensor<4x4x?x16xf32>, %r: tensor<2x?xi32>) {
  // expected-error @+1 {{expected rows of shape [4, ?] ([batch, positions]), found [2, ?]}}
  %0 = tfm.cache_rows %x[%r] axis 2 : tensor<4x4x?x16xf32>, tensor<2x?xi32> -> tensor<4x4x?x16xf32>
  return
}

// -----

func.func @cache_rows_too_few(%x: tensor<?x4x8x16xf32>, %r: tensor<?x7xi32>) {
  // expected-error @+1 {{expected rows for each of the 8 positions read, found 7}}
  %0 = tfm.cache_rows %x[%r] axis 2 : tensor<?x4x8x16xf32>, tensor<?x7xi32> -> tensor<?x4x8x16xf32>
  return
}

// -----

func.func @attention_key_rows_other_batch(%q: tensor<2x4x1x16xf32>, %k: tensor<2x4x8x16xf32>, %r: tensor<3x8xi32>) {
  // expected-error @+1 {{expected key rows of shape [2, ?] ([batch, positions]), found [3, 8]}}
  %0 = tfm.attention %q, %k, %k key_rows(%r : tensor<3x8xi32>) scale 1.0
      : tensor<2x4x1x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x1x16xf32>
  return
}

// -----

func.func @attention_key_rows_too_few(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x8x16xf32>, %r: tensor<?x4xi32>) {
  // expected-error @+1 {{expected key rows for each of the 8 positions read, found 4}}
  %0 = tfm.attention %q, %k, %k key_rows(%r : tensor<?x4xi32>) scale 1.0
      : tensor<?x4x1x16xf32>, tensor<?x4x8x16xf32>, tensor<?x4x8x16xf32> -> tensor<?x4x1x16xf32>
  return
}

// -----

func.func @slice_off_axis(%x: tensor<?x4x?x16xf32>, %o: index, %n: index) {
  // expected-error @+1 {{expected result of shape [?, 4, ?, 16] (the input's shape off the axis), found [?, 4, ?, 8]}}
  %0 = tfm.slice %x[%o, %n] axis 2 : tensor<?x4x?x16xf32> -> tensor<?x4x?x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<?x16xf32>) {
  // expected-error @+1 {{expected a query of rank 3 or more, found rank 2}}
  %0 = tfm.attention %q, %q, %q scale 0.25 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_ranks(%q: tensor<?x4x?x16xf32>, %k: tensor<?x?x16xf32>) {
  // expected-error @+1 {{expected query, key and value of the same rank, found ranks 4, 3 and 4}}
  %0 = tfm.attention %q, %k, %q scale 0.25 : tensor<?x4x?x16xf32>, tensor<?x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @attention_key(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x8xf32>, %v: tensor<?x4x?x16xf32>) {
  // expected-error @+1 {{expected key of shape [?, 4, ?, 16] (the query's batch dimensions and head_dim), found [?, 4, ?, 8]}}
  %0 = tfm.attention %q, %k, %v scale 0.25 : tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @attention_value(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x7x16xf32>, %v: tensor<?x4x5x16xf32>) {
  // expected-error @+1 {{expected value of shape [?, 4, 7, 16] (the key's batch dimensions and length), found [?, 4, 5, 16]}}
  %0 = tfm.attention %q, %k, %v scale 0.25 : tensor<?x4x?x16xf32>, tensor<?x4x7x16xf32>, tensor<?x4x5x16xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x32xf32>) {
  // expected-error @+1 {{expected result of shape [?, 4, ?, 32] (the query's shape with the value's head_dim), found [?, 4, ?, 16]}}
  %0 = tfm.attention %q, %q, %v scale 0.25 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x32xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @attention_lengths(%q: tensor<2x4x?x16xf32>, %l: tensor<3xi32>) {
  // expected-error @+1 {{expected key lengths of shape [2] (one per batch row), found [3]}}
  %0 = tfm.attention %q, %q, %q lengths(%l : tensor<3xi32>) scale 0.25 : tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32> -> tensor<2x4x?x16xf32>
  return
}

// -----

func.func @attention_starts(%q: tensor<2x4x?x16xf32>, %s: tensor<3xi32>) {
  // expected-error @+1 {{expected key starts of shape [2] (one per batch row), found [3]}}
  %0 = tfm.attention %q, %q, %q starts(%s : tensor<3xi32>) causal scale 0.25 : tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32> -> tensor<2x4x?x16xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<?x4x?x16xf32>) {
  // expected-error @+1 {{expected a finite non-zero scale, found 0}}
  %0 = tfm.attention %q, %q, %q scale 0.0 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @layer_norm_residual(%x: tensor<?x?x64xf32>, %r: tensor<?x?x32xf32>) {
  // expected-error @+1 {{expected residual of shape [?, ?, 64] (the input's shape), found [?, ?, 32]}}
  %0 = tfm.layer_norm %x residual(%r : tensor<?x?x32xf32>) epsilon 1.0e-5 : tensor<?x?x64xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<?x?x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{expected scale of shape [64] (the input's last dimension), found [32]}}
  %0 = tfm.layer_norm %x scale(%g : tensor<32xf32>) epsilon 1.0e-5 : tensor<?x?x64xf32>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<?x?x64xf32>, %b: tensor<1x64xf32>) {
  // expected-error @+1 {{expected bias of shape [64] (the input's last dimension), found [1, 64]}}
  %0 = tfm.layer_norm %x bias(%b : tensor<1x64xf32>) epsilon 1.0e-5 : tensor<?x?x64xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expected a positive finite epsilon, found 0}}
  %0 = tfm.layer_norm %x epsilon 0.0 : tensor<?x?x64xf32>
  return
}

// -----

func.func @layer_norm_element_type(%x: tensor<?x?x64xf32>, %g: tensor<64xf16>) {
  // expected-error @+1 {{expected all floating-point tensors to have element type 'f32', found 'f16' for operand #1}}
  %0 = tfm.layer_norm %x scale(%g : tensor<64xf16>) epsilon 1.0e-5 : tensor<?x?x64xf32>
  return
}

// -----

func.func @select_shapes(%c: tensor<?x4xi1>, %a: tensor<?x8xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{operand shapes [?, 4], [?, 8] and [] do not broadcast}}
  %0 = tfm.select %c, %a, %b : tensor<?x4xi1>, tensor<?x8xf32>, tensor<f32> -> tensor<?x8xf32>
  return
}

// -----

func.func @select_condition_type(%c: tensor<?x8xi32>, %a: tensor<?x8xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<?x8xi32>'}}
  %0 = tfm.select %c, %a, %a : tensor<?x8xi32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @select_result(%c: tensor<?x8xi1>, %a: tensor<?x8xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{expected result of shape [?, 8] (the broadcast of the operand shapes), found [?, 1]}}
  %0 = tfm.select %c, %a, %b : tensor<?x8xi1>, tensor<?x8xf32>, tensor<f32> -> tensor<?x1xf32>
  return
}

// -----

func.func @attention_mask_grows_scores(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x?x16xf32>, %m: tensor<?x1x7x?xf32>) {
  // expected-error @+1 {{expected a mask that broadcasts to the scores [?, 4, 1, ?], found [?, 1, 7, ?]}}
  %0 = tfm.attention %q, %k, %k mask(%m : tensor<?x1x7x?xf32>) scale 0.25 : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
  return
}

// -----

func.func @attention_mask_rank(%q: tensor<?x4x?x16xf32>, %m: tensor<2x?x4x?x?xf32>) {
  // expected-error @+1 {{expected a mask that broadcasts to the scores [?, 4, ?, ?], found [2, ?, 4, ?, ?]}}
  %0 = tfm.attention %q, %q, %q mask(%m : tensor<2x?x4x?x?xf32>) scale 0.25 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @relative_bias_dynamic_table(%t: tensor<?x8xf32>, %n: index) {
  // expected-error @+1 {{expected a static table of shape [buckets, heads], found [?, 8]}}
  %0 = tfm.relative_position_bias %t, %n, %n, %n bidirectional max_distance 128 : tensor<?x8xf32> -> tensor<1x8x?x?xf32>
  return
}

// -----

func.func @relative_bias_heads(%t: tensor<32x8xf32>, %n: index) {
  // expected-error @+1 {{expected result of shape [1, 8, ?, ?] ([1, heads, queries, keys]), found [1, 4, ?, ?]}}
  %0 = tfm.relative_position_bias %t, %n, %n, %n max_distance 128 : tensor<32x8xf32> -> tensor<1x4x?x?xf32>
  return
}

// -----

func.func @relative_bias_buckets(%t: tensor<3x8xf32>, %n: index) {
  // expected-error @+1 {{expected at least 4 buckets, found 3}}
  %0 = tfm.relative_position_bias %t, %n, %n, %n bidirectional max_distance 128 : tensor<3x8xf32> -> tensor<1x8x?x?xf32>
  return
}

// -----

func.func @relative_bias_distance(%t: tensor<32x8xf32>, %n: index) {
  // expected-error @+1 {{expected max_distance above 16 (half the buckets), found 16}}
  %0 = tfm.relative_position_bias %t, %n, %n, %n max_distance 16 : tensor<32x8xf32> -> tensor<1x8x?x?xf32>
  return
}

// -----

func.func @blocks_shape(%x: tensor<?x100xf32>) -> tensor<?x1x2xf32> {
  // expected-error @+1 {{expected result of shape [?, 2, 2] (the input's with its last axis as ceil(size / block) blocks of (max, sum of exp(x - max))), found [?, 1, 2]}}
  %0 = tfm.logsumexp_blocks %x block 64 : tensor<?x100xf32> -> tensor<?x1x2xf32>
  return %0 : tensor<?x1x2xf32>
}

// -----

func.func @blocks_bf16(%x: tensor<?x64xbf16>) -> tensor<?x1x2xbf16> {
  // expected-error @+1 {{expected f32 tensors, found 'bf16'}}
  %0 = tfm.logsumexp_blocks %x block 64 : tensor<?x64xbf16> -> tensor<?x1x2xbf16>
  return %0 : tensor<?x1x2xbf16>
}

// -----

func.func @blocks_empty(%x: tensor<?x64xf32>) -> tensor<?x1x2xf32> {
  // expected-error @+1 {{attribute 'block' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = tfm.logsumexp_blocks %x block 0 : tensor<?x64xf32> -> tensor<?x1x2xf32>
  return %0 : tensor<?x1x2xf32>
}
